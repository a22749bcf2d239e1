"""memplan against ExecuTorch's own memory planner, in ExecuTorch's runtime.

Each model (``torch.nn`` modules and ``transformers`` architectures built
from small configs with random weights; nothing is downloaded) is exported
with ``torch.export`` -> ``to_edge`` -> ``to_executorch`` three times: with
ExecuTorch's default planner (greedy) and with ``memplan_algorithm()``
(``memplan.tools.exporters.executorch.hook``) without and with in place (``inplace``:
element-wise outputs in their dying inputs' bytes). The greedy program is
also re-planned after the fact (``memplan.tools.exporters.executorch.replan.replan``,
what ``memplan-export-pte`` runs) four ways: in the program's order without
and with in place (``--no-reorder --no-inplace``, ``--no-reorder``), and
with its instructions reordered to the order of lowest peak without and
with in place (``--no-inplace``, the default). Every program runs in
ExecuTorch's runtime (portable kernels) on the same inputs; the table gives
the arena of each (``non_const_buffer_sizes[1]``), the peak of live bytes
of the order ExecuTorch runs (the order's bound, which no plan without
shared bytes goes below) and of the reordered program, whether all outputs
are bit-identical to the greedy program's, and the CPU seconds of
``to_executorch`` with each planner and of the default re-plan.

    pip install -e '.[executorch]' transformers
    python benchmarks/executorch_models.py [--only gpt2,bert] [--markdown OUT.md]

(Not ``executorch.py``: run as a script, that name would shadow the
``executorch`` package.)
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

warnings.simplefilter("ignore")

import torch  # noqa: E402
from executorch.exir import ExecutorchBackendConfig, to_edge  # noqa: E402
from executorch.exir.passes import MemoryPlanningPass  # noqa: E402
from executorch.runtime import Runtime  # noqa: E402
from torch import nn  # noqa: E402

from memplan.tools.exporters.executorch.hook import memplan_algorithm  # noqa: E402
from memplan.tools.exporters.executorch.replan import replan  # noqa: E402

Model = tuple[nn.Module, tuple[Any, ...]]


class Blocks(nn.Module):
    """Linear layers with a concatenation, a slice and skips."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(64, 256), nn.Linear(256, 128)
        self.c, self.d, self.e = nn.Linear(384, 64), nn.Linear(64, 512), nn.Linear(512, 64)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.a(x))
        g = torch.relu(self.b(h))
        k = self.c(torch.cat([g, h], 1)) + x
        return self.e(torch.relu(self.d(k))) + k


class ResidualCNN(nn.Module):
    """A small ResNet: stem, three stages of two residual blocks, head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        layers: list[nn.Module] = []
        channels = 16
        for width, stride in [(16, 1), (32, 2), (64, 2)]:
            for block in range(2):
                layers.append(_Residual(channels, width, stride if block == 0 else 1))
                channels = width
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(64, 10)

    def forward(self, x: Any) -> Any:
        y = self.stages(self.stem(x))
        return self.head(y.mean((2, 3)))


class _Residual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout),
        )  # fmt: skip
        self.skip = nn.Conv2d(cin, cout, 1, stride) if (cin, stride) != (cout, 1) else None

    def forward(self, x: Any) -> Any:
        return torch.relu(self.a(x) + (x if self.skip is None else self.skip(x)))


class InvertedResidualCNN(nn.Module):
    """MobileNetV2-style inverted residual blocks (expand, depthwise, project)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        specs = [(16, 16, 1), (16, 24, 2), (24, 24, 1), (24, 32, 2), (32, 32, 1), (32, 32, 1)]
        self.blocks = nn.ModuleList(_Inverted(cin, cout, stride) for cin, cout, stride in specs)
        self.head = nn.Linear(32, 10)

    def forward(self, x: Any) -> Any:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean((2, 3)))


class _Inverted(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        hidden = cin * 6
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1),
        )  # fmt: skip
        self.residual = stride == 1 and cin == cout

    def forward(self, x: Any) -> Any:
        y = self.body(x)
        return x + y if self.residual else y


class UNet(nn.Module):
    """Two down and two up levels with skip concatenations."""

    def __init__(self) -> None:
        super().__init__()
        self.d1, self.d2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.mid = nn.Conv2d(32, 32, 3, padding=1)
        self.u2, self.u1 = nn.Conv2d(64, 16, 3, padding=1), nn.Conv2d(32, 8, 3, padding=1)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x: Any) -> Any:
        a = torch.relu(self.d1(x))
        b = torch.relu(self.d2(nn.functional.max_pool2d(a, 2)))
        m = torch.relu(self.mid(nn.functional.max_pool2d(b, 2)))
        up2 = nn.functional.interpolate(m, scale_factor=2.0)
        c = torch.relu(self.u2(torch.cat([up2, b], 1)))
        up1 = nn.functional.interpolate(c, scale_factor=2.0)
        return self.out(torch.relu(self.u1(torch.cat([up1, a], 1))))


class WideMLP(nn.Module):
    """An MLP whose activations are wider than its weights: the peak of live
    bytes is at an element-wise activation, where in place pays."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(64, 1024), nn.Linear(1024, 64)

    def forward(self, x: Any) -> Any:
        return self.down(nn.functional.gelu(torch.sigmoid(torch.relu(self.up(x)))))


class Branches(nn.Module):
    """Two wide branches written side by side: in the program's order both
    branches' activations are live together, where a reorder pays."""

    def __init__(self) -> None:
        super().__init__()
        self.up1, self.up2 = nn.Linear(64, 1024), nn.Linear(64, 1024)
        self.down1, self.down2 = nn.Linear(1024, 64), nn.Linear(1024, 64)

    def forward(self, x: Any) -> Any:
        a, b = torch.relu(self.up1(x)), torch.relu(self.up2(x))
        return self.down1(a) + self.down2(b)


def _torch_models() -> dict[str, Callable[[], Model]]:
    def encoder() -> Model:
        layer = nn.TransformerEncoderLayer(256, 4, 512, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, 4, enable_nested_tensor=False), (
            torch.randn(1, 128, 256),
        )

    return {
        "blocks (nn.Linear, cat, skips)": lambda: (Blocks(), (torch.randn(8, 64),)),
        "TransformerEncoder d256 x4, seq 128": encoder,
        "residual CNN (ResNet-like)": lambda: (ResidualCNN(), (torch.randn(1, 3, 64, 64),)),
        "inverted residual CNN (MobileNetV2-like)": lambda: (
            InvertedResidualCNN(),
            (torch.randn(1, 3, 96, 96),),
        ),
        "UNet (concatenated skips)": lambda: (UNet(), (torch.randn(1, 3, 64, 64),)),
        "wide MLP (activations wider than weights)": lambda: (WideMLP(), (torch.randn(256, 64),)),
        "two wide branches side by side": lambda: (Branches(), (torch.randn(256, 64),)),
    }


class _LastHidden(nn.Module):
    """A transformers model's first output tensor (its last hidden state or logits)."""

    def __init__(self, model: nn.Module, key: str) -> None:
        super().__init__()
        self.model, self.key = model, key

    def forward(self, *args: Any) -> Any:
        output = self.model(*args)
        return output[self.key] if self.key in output else output[0]


def _transformers_models() -> dict[str, Callable[[], Model]]:
    import transformers as tf

    def ids(vocab: int, length: int) -> Any:
        return torch.randint(0, vocab, (1, length))

    def gpt2() -> Model:
        config = tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=128, vocab_size=1000)
        config.use_cache = False
        return _LastHidden(tf.GPT2LMHeadModel(config), "logits"), (ids(1000, 64),)

    def llama() -> Model:
        config = tf.LlamaConfig(
            hidden_size=128, intermediate_size=344, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128, use_cache=False,
        )  # fmt: skip
        return _LastHidden(tf.LlamaForCausalLM(config), "logits"), (ids(1000, 64),)

    def bert() -> Model:
        config = tf.BertConfig(
            hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
            vocab_size=1000, max_position_embeddings=128,
        )  # fmt: skip
        return _LastHidden(tf.BertModel(config), "last_hidden_state"), (ids(1000, 64),)

    def vit() -> Model:
        config = tf.ViTConfig(
            hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
            image_size=64, patch_size=8,
        )  # fmt: skip
        return _LastHidden(tf.ViTModel(config), "last_hidden_state"), (torch.randn(1, 3, 64, 64),)

    def resnet() -> Model:
        config = tf.ResNetConfig(
            embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
            layer_type="basic",
        )  # fmt: skip
        return _LastHidden(tf.ResNetModel(config), "pooler_output"), (torch.randn(1, 3, 64, 64),)

    def mobilenet() -> Model:
        config = tf.MobileNetV2Config(image_size=64, depth_multiplier=0.35)
        model = tf.MobileNetV2Model(config)
        return _LastHidden(model, "pooler_output"), (torch.randn(1, 3, 64, 64),)

    def whisper_encoder() -> Model:
        config = tf.WhisperConfig(
            d_model=128, encoder_layers=2, encoder_attention_heads=4, decoder_layers=1,
            decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
            num_mel_bins=40, max_source_positions=64,
        )  # fmt: skip
        encoder = tf.WhisperModel(config).get_encoder()
        return _LastHidden(encoder, "last_hidden_state"), (torch.randn(1, 40, 128),)

    def t5_encoder() -> Model:
        config = tf.T5Config(
            d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4, vocab_size=1000,
        )  # fmt: skip
        return _LastHidden(tf.T5EncoderModel(config), "last_hidden_state"), (ids(1000, 64),)

    return {
        "GPT-2 (2 layers, d 128, seq 64)": gpt2,
        "Llama (2 layers, d 128, GQA, seq 64)": llama,
        "BERT (2 layers, d 128, seq 64)": bert,
        "ViT (2 layers, d 128, 64x64)": vit,
        "ResNet (transformers, 64x64)": resnet,
        "MobileNetV2 (transformers, 0.35, 64x64)": mobilenet,
        "Whisper encoder (2 layers, d 128)": whisper_encoder,
        "T5 encoder (2 layers, d 128, seq 64)": t5_encoder,
    }


@dataclass
class Row:
    name: str
    greedy: int | None = None
    hook: int | None = None
    """memplan through the hook, ``inplace=False``."""
    hook_inplace: int | None = None
    bound: int | None = None
    """The order's bound: the peak of live bytes of the program's order."""
    replanned: int | None = None
    """``--no-reorder --no-inplace``."""
    inplace: int | None = None
    """``--no-reorder``."""
    reordered: int | None = None
    """``--no-inplace``."""
    both: int | None = None
    """The default: reordered and in place."""
    reordered_bound: int | None = None
    shared: int = 0
    identical: dict[str, bool] = field(default_factory=dict[str, bool])
    greedy_seconds: float = 0.0
    memplan_seconds: float = 0.0
    replan_seconds: float = 0.0
    problem: str | None = None


def _export(model: nn.Module, example: tuple[Any, ...], algo: Any) -> tuple[Any, float]:
    edge = to_edge(torch.export.export(model, example))
    config = (
        ExecutorchBackendConfig()
        if algo is None
        else ExecutorchBackendConfig(
            memory_planning_pass=MemoryPlanningPass(memory_planning_algo=algo)
        )
    )
    started = time.process_time()
    program = edge.to_executorch(config)
    return program, time.process_time() - started


def _run(program: Any, example: tuple[Any, ...]) -> list[Any]:
    buffer = program if isinstance(program, bytes) else program.buffer
    method = Runtime.get().load_program(buffer).load_method("forward")
    assert method is not None
    return list(method.execute(list(example)))


def _arena(replanned: Any) -> Any:
    return next(m for m in replanned.memories if m.memory_id == 1)


def measure(name: str, build: Callable[[], Model]) -> Row:
    row = Row(name)
    torch.manual_seed(0)
    try:
        model, example = build()
        model = model.eval()
        greedy, row.greedy_seconds = _export(model, example, None)
        algo = memplan_algorithm(inplace=False)
        hook, row.memplan_seconds = _export(model, example, algo)
        hook_inplace, _ = _export(model, example, memplan_algorithm())
    except Exception as error:  # noqa: BLE001 - a model that does not export is a row
        row.problem = f"export: {type(error).__name__}: {str(error).splitlines()[0][:120]}"
        return row
    plan = greedy.executorch_program.execution_plan[0]
    row.greedy = list(plan.non_const_buffer_sizes)[1]
    row.hook = list(hook.executorch_program.execution_plan[0].non_const_buffer_sizes)[1]
    row.hook_inplace = list(
        hook_inplace.executorch_program.execution_plan[0].non_const_buffer_sizes
    )[1]
    # The graph holding the others is planned last; its memory 1 is the arena.
    row.bound = algo.records[-1].bounds.get(1)
    programs: dict[str, Any] = {"hook": hook, "hook, in place": hook_inplace}
    for key, attribute, inplace, reorder in (
        ("re-plan", "replanned", False, False),
        ("in place", "inplace", True, False),
        ("reordered", "reordered", False, True),
        ("both", "both", True, True),
    ):
        started = time.process_time()
        replanned = replan(greedy.buffer, name, inplace=inplace, reorder=reorder)
        if key == "both":
            row.replan_seconds = time.process_time() - started
        arena = _arena(replanned)
        programs[key] = replanned.data
        setattr(row, attribute, arena.after)
        if key == "in place":
            row.shared = arena.shared
        if key == "reordered":
            row.reordered_bound = arena.lower_bound
    expected = _run(greedy, example)

    def same(got: list[Any]) -> bool:
        return len(expected) == len(got) and all(torch.equal(a, b) for a, b in zip(expected, got))

    row.identical = {key: same(_run(program, example)) for key, program in programs.items()}
    return row


HEADER = (
    "| model | ExecuTorch greedy | memplan hook (order's bound) | hook, in place "
    "| re-plan, program's order | order's bound | re-plan, in place "
    "| re-plan, reordered | reordered order's bound | re-plan, reordered + in place "
    "| best / greedy | outputs (6 programs) | CPU s (greedy, hook, re-plan) |"
)


def table(rows: list[Row]) -> str:
    lines = [HEADER, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|"]
    for row in rows:
        if row.problem is not None:
            lines.append(f"| {row.name} |" + " - |" * 10 + f" {row.problem} | - |")
            continue
        assert row.greedy is not None and row.hook is not None and row.hook_inplace is not None
        assert row.replanned is not None and row.bound is not None and row.inplace is not None
        assert row.reordered is not None and row.both is not None
        assert row.reordered_bound is not None
        best = min(row.hook_inplace, row.both)
        ratio = f"{best / row.greedy:.3f}" if row.greedy else "-"
        differ = [key for key, same in row.identical.items() if not same]
        outputs = "bit-identical" if not differ else "DIFFER: " + ", ".join(differ)
        lines.append(
            f"| {row.name} | {row.greedy:,} | {row.hook:,} | {row.hook_inplace:,} | "
            f"{row.replanned:,} | {row.bound:,} | {row.inplace:,} ({row.shared} shared) | "
            f"{row.reordered:,} | {row.reordered_bound:,} | {row.both:,} | {ratio} | "
            f"{outputs} | "
            f"{row.greedy_seconds:.2f}, {row.memplan_seconds:.2f}, {row.replan_seconds:.2f} |"
        )
    return "\n".join(lines)


PREAMBLE = """# memplan in ExecuTorch's memory planning hook

`python benchmarks/executorch_models.py --markdown benchmarks/RESULTS-executorch.md`,
{date}, torch {torch}, ExecuTorch {executorch}, transformers {transformers}
(models built from configs with random weights, seed 0; nothing
downloaded). Each model exported with `torch.export` -> `to_edge` ->
`to_executorch` (portable kernels, default config) with ExecuTorch's
default planner and with `memory_planning_algo=memplan_algorithm()`
without and with in place (`inplace=False`, the default), and the greedy
program re-planned after the fact (`memplan-export-pte`'s `replan`) in the
program's order (`--no-reorder`) and reordered (the default), each without
and with in place (`--no-inplace`, the default). All six programs run in
ExecuTorch's runtime on the same inputs, outputs compared with the greedy
program's. Bytes of memory 1 (`non_const_buffer_sizes[1]`, the arena). The
order's bound is the peak of live bytes of the order ExecuTorch runs (no
plan without shared bytes goes below it); the reordered order's bound is
the reordered program's. In place takes a plan below its order's bound.
"best / greedy" is the smaller of the hook with in place and the default
re-plan over greedy. CPU seconds: `to_executorch` with each planner (the
whole lowering, planning included) and the default re-plan. The re-plan
sizes tensors by their bytes, the hook by ExecuTorch's 16-byte-aligned
sizes, so the re-plan can end a few bytes below the hook's bound.

"""


def _preamble() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "(not installed)"

    return PREAMBLE.format(
        date=time.strftime("%Y-%m-%d"),
        torch=installed("torch"),
        executorch=installed("executorch"),
        transformers=installed("transformers"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated substrings of model names")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    models = _torch_models()
    try:
        models.update(_transformers_models())
    except ImportError:
        print("transformers is not installed: its models are left out")
    wanted = [w.lower() for w in args.only.split(",") if w]
    rows = []
    for name, build in models.items():
        if wanted and not any(w in name.lower() for w in wanted):
            continue
        rows.append(measure(name, build))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print()
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(_preamble() + text + "\n")


if __name__ == "__main__":
    main()
