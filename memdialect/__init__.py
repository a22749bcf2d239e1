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
