// The README's examples through the main pipeline: every static storage is
// pinned, verify-plan accepts the plan, and the pool uses exactly the lower
// bound (the peak of live bytes), as plan-report shows (on stderr, before the IR).
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=MLP
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=CONV
// One of the slowest files: run_tests.sh --quick leaves it out.
// UNSUPPORTED: quick

// Composition: coalesce (overlapping or laid end to end) or reuse before
// usmp never costs memory. usmp plans a coalesced storage split into one
// storage per tensor, which is the uncoalesced program, and keeps the split
// form because the merged storage (live for the whole function) cannot
// share bytes with the escaping result: 1024 + 64 > 1024.
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --coalesce --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=MLP
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --coalesce=overlap=false --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=MLP
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --coalesce --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=CONV
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --coalesce=overlap=false --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=CONV
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --reuse --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=REUSE-MLP
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --reuse --usmp --verify-plan --plan-report 2>&1 | filecheck %s --check-prefix=REUSE-CONV

// MLP (256 -> 128 -> 10, f32): the 512-byte hidden vectors ping-pong
// between offsets 512 and 0 (each is live with the next one only); the
// 40-byte logits follow the same pattern at 0 and 64 (align 64). Peak:
// two 512-byte vectors = 1024.
// The "no planning" column depends on the pipeline (coalesce merges storages).
// MLP:       @workspace_cpu     -  {{[0-9]+}}  1024         1024    1.00x        6
// MLP:       memory.pool @workspace_cpu targets ["cpu"] used 1024
// MLP-NOT:   memory.alloc_storage :
// MLP:       %h0_storage = memory.alloc_storage at @workspace_cpu[512] : !memory.storage<512>
// MLP:       %h1_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<512>
// MLP:       %h2_storage = memory.alloc_storage at @workspace_cpu[512] : !memory.storage<512>
// MLP:       %h3_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<40>
// MLP:       %h4_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<40>
// MLP:       %y_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<40>
// MLP-NOT:   memory.alloc_storage :

// Conv net: the two 32 KiB activations of the first block alternate between
// 0 and 32768; each pooled output goes to 16384, beside its input's live
// half. Peak: two 32 KiB activations = 65536.
// CONV:      @workspace_cpu     -  {{[0-9]+}}  65536        65536    1.00x       11
// CONV:      memory.pool @workspace_cpu targets ["cpu"] used 65536
// CONV-NOT:  memory.alloc_storage :
// CONV:      %c1_storage = memory.alloc_storage at @workspace_cpu[32768] : !memory.storage<32768>
// CONV:      %a1_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<32768>
// CONV:      %r1_storage = memory.alloc_storage at @workspace_cpu[32768] : !memory.storage<32768>
// CONV:      %p1_storage = memory.alloc_storage at @workspace_cpu[16384] : !memory.storage<8192>
// CONV-NOT:  memory.alloc_storage :

// reuse merges whole storages into slots; usmp keeps the slots when
// splitting them would not use less, and still reaches the bound.
// REUSE-MLP:       @workspace_cpu     -  {{[0-9]+}}  1024         1024    1.00x
// REUSE-MLP:       memory.pool @workspace_cpu targets ["cpu"] used 1024
// REUSE-MLP-NOT:   memory.alloc_storage :
// REUSE-CONV:      @workspace_cpu     -  {{[0-9]+}}  65536        65536    1.00x
// REUSE-CONV:      memory.pool @workspace_cpu targets ["cpu"] used 65536
// REUSE-CONV-NOT:  memory.alloc_storage :
