"""Data types and tensor descriptors (4-D NCHW, with optional explicit strides)."""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass, field

import numpy as np

from .errors import BadParam, check


class DataType(enum.Enum):
    """Element types a descriptor may carry. FLOAT16 is half storage with float arithmetic in every kernel
    (vload_half / vstore_half_rte are core OpenCL: no cl_khr_fp16 needed); see docs/guide/fp16.md."""

    FLOAT32 = "FP32"
    FLOAT16 = "FP16"

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(np.float32 if self is DataType.FLOAT32 else np.float16)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def unit_roundoff(self) -> float:
        """Largest relative error of rounding a real to this type (round to nearest): 2^-24 for FP32, 2^-11
        for FP16 (10 stored mantissa bits). A result stored in this type is off by up to this much."""
        return 2.0 ** -(np.finfo(self.numpy).nmant + 1)

    @property
    def cl_type(self) -> str:
        return "float" if self is DataType.FLOAT32 else "half"

    @property
    def defines(self) -> dict[str, int]:
        """The -D defines kernels/types.h reads (DATA_T, LOAD, STORE follow from them)."""
        return {"MIOPY_HALF": int(self is DataType.FLOAT16)}

    @classmethod
    def of(cls, value: DataType | str | np.dtype | type) -> DataType:
        """Accept a DataType, 'FP32'/'float32', or a NumPy dtype."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str) and value.upper() in ("FP32", "FP16"):
            return cls(value.upper())
        try:
            dt = np.dtype(value)
        except TypeError as exc:
            raise BadParam("dtype", f"unknown data type {value!r}") from exc
        for member in cls:
            if member.numpy == dt:
                return member
        raise BadParam("dtype", f"unsupported data type {dt}")


# Kernels store in the data type and compute in float (kernels/types.h): what a kernel stages in local memory,
# keeps as partial sums or writes to a float workspace takes this many bytes an element, whatever the storage type.
FLOAT_BYTES = DataType.FLOAT32.itemsize


# Math modes, like cuDNN's math type and PyTorch's allow_tf32: "strict" computes fp32 convolutions in fp32;
# "tf32" lets find choose solvers that round fp32 operands to TF32 (10-bit mantissa) on tensor cores.
MATH_MODES = ("strict", "tf32")
STRICT = "strict"


def check_math_mode(value, field: str = "math_mode") -> str:
    """value when it is a math mode ("strict" or "tf32"); BadParam(field) otherwise."""
    check(isinstance(value, str) and value in MATH_MODES, field, f"must be one of {MATH_MODES}, got {value!r}")
    return value


def as_int(value, field: str) -> int:
    """value as an int (a Python or NumPy integer, never a bool); BadParam(field) for anything else."""
    if isinstance(value, (bool, np.bool_)):
        raise BadParam(field, f"expected an integer, got the boolean {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise BadParam(field, f"expected an integer, got {value!r}") from None


def as_flag(value, field: str) -> bool:
    """value as a bool (a Python or NumPy bool, never 0, 1 or a string); BadParam(field) for anything else."""
    if value.__class__ is bool:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise BadParam(field, f"must be a bool (True or False), got {value!r}")


def holds_bool(values) -> bool:
    """Whether a tuple or list (nested ones too) holds a bool. A memo key cannot tell True from 1 (they are
    equal, with one hash): a warm path keyed on a caller's numbers takes the cold path for such a key, whose
    checks name the field (as_int refuses bools)."""
    for value in values:
        cls = value.__class__
        if cls is bool or cls is np.bool_ or ((cls is tuple or cls is list) and holds_bool(value)):
            return True
    return False


def as_real(value, field: str) -> float:
    """value as a finite float (a Python or NumPy real number, never a bool or a string); BadParam(field)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise BadParam(field, f"expected a finite real number, got {value!r}")
    number = float(value)
    if number - number != 0.0:
        raise BadParam(field, f"must be finite, got {number}")
    return number


FLOAT32_MAX = float(np.finfo(np.float32).max)


def as_float32(value, field: str) -> np.float32:
    """value as a float32 kernel argument: a finite real number within float32's range; BadParam(field)."""
    number = as_real(value, field)
    if abs(number) > FLOAT32_MAX:
        raise BadParam(field, f"{number} is out of float32's range")
    return np.float32(number)


def enum_member(cls, value, field: str, what: str):
    """The member of an int enum given as a member, its value or its name (any case); else BadParam(field)."""
    if isinstance(value, str) and value.upper() in cls.__members__:
        return cls[value.upper()]
    if isinstance(value, (bool, np.bool_)):   # True == 1, but no one means a mode by it
        raise BadParam(field, f"unknown {what} {value!r}; known: {[m.name for m in cls]}")
    try:
        return cls(value)
    except (ValueError, TypeError):
        raise BadParam(field, f"unknown {what} {value!r}; known: {[m.name for m in cls]}") from None


def int_tuple(values, field: str) -> tuple[int, ...]:
    """values as a tuple of ints (Python or NumPy integers, not bools); BadParam(field) for anything else."""
    if isinstance(values, (str, bytes)):
        raise BadParam(field, f"expected a sequence of integers, got {values!r}")
    try:
        items = tuple(values)
    except TypeError as exc:
        raise BadParam(field, f"expected a sequence of integers, got {values!r}") from exc
    return tuple(as_int(v, field) for v in items)


def packed_strides(dims: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major (NCHW-packed) element strides of dims."""
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


@dataclass(frozen=True, eq=False)
class TensorDesc:
    """A 4-D tensor: data type, dims (N, C, H, W) and element strides (packed NCHW by default).

    Descriptors are hashable and compare by value; the hash is computed once (plans are memoised by
    tuples of descriptors, so a warm call hashes a few cached ints)."""

    dtype: DataType
    dims: tuple[int, int, int, int]
    strides: tuple[int, int, int, int]
    _hash: int = field(init=False, repr=False, compare=False)

    def __init__(self, dtype, dims, strides=None):
        dt = DataType.of(dtype)
        dims_t = int_tuple(dims, "dims")
        check(len(dims_t) == 4, "dims", f"expected 4 dims (N, C, H, W), got {len(dims_t)}")
        for name, d in zip("NCHW", dims_t):
            check(d > 0, "dims", f"{name} must be positive, got {d}")
        if strides is None:
            strides_t = packed_strides(dims_t)
        else:
            strides_t = int_tuple(strides, "strides")
            _validate_strides(dims_t, strides_t)
        object.__setattr__(self, "dtype", dt)
        object.__setattr__(self, "dims", dims_t)
        object.__setattr__(self, "strides", strides_t)
        object.__setattr__(self, "_hash", hash((dt, dims_t, strides_t)))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TensorDesc):
            return NotImplemented
        return (self._hash == other._hash and self.dims == other.dims and self.strides == other.strides
                and self.dtype is other.dtype)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (TensorDesc, (self.dtype, self.dims, self.strides))   # the hash is recomputed per process

    @property
    def n(self) -> int:
        return self.dims[0]

    @property
    def c(self) -> int:
        return self.dims[1]

    @property
    def h(self) -> int:
        return self.dims[2]

    @property
    def w(self) -> int:
        return self.dims[3]

    @property
    def is_packed(self) -> bool:
        return self.strides == packed_strides(self.dims)

    @property
    def element_count(self) -> int:
        """Number of logical elements."""
        return self.dims[0] * self.dims[1] * self.dims[2] * self.dims[3]

    @property
    def element_span(self) -> int:
        """Elements a buffer must hold: one past the largest offset addressed."""
        return 1 + sum((d - 1) * s for d, s in zip(self.dims, self.strides))

    @property
    def nbytes(self) -> int:
        return self.element_span * self.dtype.itemsize

    def __repr__(self) -> str:
        extra = "" if self.is_packed else f", strides={self.strides}"
        return f"TensorDesc({self.dtype.value}, {self.dims}{extra})"


def _validate_strides(dims: tuple[int, ...], strides: tuple[int, ...]) -> None:
    check(len(strides) == 4, "strides", f"expected 4 strides, got {len(strides)}")
    for name, s in zip("NCHW", strides):
        check(s > 0, "strides", f"stride of {name} must be positive, got {s}")
    # No two elements may share an offset: sorted by stride, each stride must cover the span below it.
    order = sorted(range(4), key=lambda i: strides[i])
    span = 1
    for i in order:
        if dims[i] == 1:
            continue
        check(strides[i] >= span, "strides", f"strides {strides} make elements of dims {dims} overlap")
        span = strides[i] * dims[i]


def strided_view(flat: np.ndarray, dims, strides) -> np.ndarray:
    """The logical tensor of dims laid out in flat by element strides."""
    byte_strides = tuple(s * flat.itemsize for s in strides)
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(dims), strides=byte_strides)
