"""The ``memory`` dialect: storages, tensors carved from them, pools, kernels."""

from xdsl.ir import Dialect

from memplan.dialect.ops import (
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    KillOp,
    PoolOp,
)
from memplan.dialect.types import StorageType
from memplan.dialect.xdsl_speedups import ENABLED

if ENABLED:
    from memplan.dialect.xdsl_speedups.interpreters_package import (
        import_interpreters_without_package_init,
    )
    from memplan.dialect.xdsl_speedups.symbol_lookup import index_symbol_lookups_while_verifying

    import_interpreters_without_package_init()
    index_symbol_lookups_while_verifying()

Memory = Dialect(
    "memory",
    [PoolOp, AllocStorageOp, AllocTensorOp, InvokeOp, KillOp],
    [StorageType],
)

__all__ = [
    "AllocStorageOp",
    "AllocTensorOp",
    "InvokeOp",
    "KillOp",
    "Memory",
    "PoolOp",
    "StorageType",
]
