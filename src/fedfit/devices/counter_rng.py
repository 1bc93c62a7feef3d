"""A counter-based random source: a uniform number as a pure function of integer keys.

``uniform(*keys)`` hashes the tuple of its keys with CPython's tuple hash (xxHash-style lanes;
integers hash to themselves modulo 2**61 - 1 and are never salted, so the value is the same in
every process and run; stable since CPython 3.8 on 64-bit builds), then scrambles it with the
SplitMix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) and maps the top 53 bits to [0, 1). Nothing is stored and no history is needed:
the number for (seed, device, stream, block) is the same whenever and in whatever order it is
asked for, which is what lets a device's state at time t be computed on demand.

>>> uniform(1, 2, 3) == uniform(1, 2, 3)
True
>>> 0.0 <= uniform(1, 2, 3) < 1.0 and uniform(1, 2, 3) != uniform(1, 2, 4)
True

:func:`uniforms` and :func:`normals` compute the same numbers for arrays of keys at once (the
tuple hash and the finaliser in numpy's wrapping 64-bit integers), bit for bit:

>>> import numpy as np
>>> uniforms(1, np.array([2, 5]), 3).tolist() == [uniform(1, 2, 3), uniform(1, 5, 3)]
True

The transcendental functions the lazy traces need (:func:`logs`, :func:`exps`, :func:`cosines`)
are numpy's ufuncs on contiguous float64 arrays, for one value (an array of one) as for many:
numpy's vector loops may differ from :mod:`math` in the last place, so the scalar and batch
paths both go through these, and agree by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_MASK = (1 << 64) - 1
#: CPython's integer hash modulus (2**61 - 1) and its tuple hash's xxHash primes.
_MODULUS = (1 << 61) - 1
_PRIME_1, _PRIME_2, _PRIME_5 = np.uint64(11400714785074694791), np.uint64(14029467366897019727), 2870177450012600261

#: An array of keys (any integer dtype) or one key.
Keys = int | npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def uniform(*keys: int) -> float:
    """A number in [0, 1) fixed by ``keys`` (any Python ints; negatives allowed)."""
    return (_mix(hash(keys) & _MASK) >> 11) * (1.0 / (1 << 53))


def normal(*keys: int) -> float:
    """A standard normal number fixed by ``keys`` (Box-Muller on two keyed uniforms, as :func:`normals`)."""
    first, second = np.array([1.0 - uniform(*keys, 0)]), np.array([uniform(*keys, 1)])  # first in (0, 1]
    return float(_box_muller(first, second)[0])


def logs(x: npt.ArrayLike) -> FloatArray:
    """Natural logarithm of each of ``x`` (a number gives an array of one)."""
    return np.log(np.ascontiguousarray(x, dtype=np.float64))


def exps(x: npt.ArrayLike) -> FloatArray:
    """``e`` to the power of each of ``x`` (a number gives an array of one)."""
    return np.exp(np.ascontiguousarray(x, dtype=np.float64))


def cosines(x: npt.ArrayLike) -> FloatArray:
    """Cosine of each of ``x``, in radians (a number gives an array of one)."""
    return np.cos(np.ascontiguousarray(x, dtype=np.float64))


def _box_muller(first: FloatArray, second: FloatArray) -> FloatArray:
    """Standard normals from uniforms ``first`` in (0, 1] and ``second`` in [0, 1), elementwise."""
    return np.sqrt(-2.0 * logs(first)) * cosines(2.0 * math.pi * second)


_S11, _S27, _S30, _S31, _S33 = (np.uint64(n) for n in (11, 27, 30, 31, 33))


def _array_lane(key: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """``hash(k) & _MASK`` of each element (CPython: ``n mod (2**61 - 1)`` keeping the sign, -1 → -2)."""
    k = np.asarray(key, dtype=np.int64)
    if k.size == 0 or (int(k.min()) >= 0 and int(k.max()) < _MODULUS):
        return k.view(np.uint64)
    m = np.abs(k) % _MODULUS
    h = np.where(k < 0, -m, m)
    return np.where(h == -1, -2, h).astype(np.int64).view(np.uint64)


#: Key tuples up to which :func:`uniforms` hashes one by one (a numpy pass costs ~30 scalar hashes).
SCALAR_UP_TO = 16


def uniforms(*keys: Keys) -> FloatArray:
    """``uniform`` of each key tuple, for keys given as broadcastable integer arrays (or ints)."""
    shape = np.broadcast_shapes(*(np.shape(k) for k in keys))
    if math.prod(shape) <= SCALAR_UP_TO and shape:
        columns = [[k] * math.prod(shape) if isinstance(k, int) else np.broadcast_to(k, shape).ravel().tolist()
                   for k in keys]
        return np.array([uniform(*row) for row in zip(*columns)], dtype=np.float64).reshape(shape)
    with np.errstate(over="ignore"):  # 64-bit wrap-around is the hash's arithmetic
        return _hashed(keys)


def _hashed(keys: tuple[Keys, ...]) -> FloatArray:
    acc = _absorb(_PRIME_5, keys)
    if isinstance(acc, int):
        return np.array(uniform(*(int(k) for k in keys)))
    return _finish(acc, len(keys))


def _absorb(acc: int | npt.NDArray[np.uint64], keys: tuple[Keys, ...]) -> int | npt.NDArray[np.uint64]:
    """The tuple hash's state after ``keys``, from state ``acc`` (a Python int until the first
    array key); ``acc`` itself is never changed (a stem's state is shared by its draws)."""
    owned = False  # whether acc is an array this function made (and may change in place)
    for key in keys:
        if isinstance(key, int):
            lane = (hash(key) & _MASK) * int(_PRIME_2) & _MASK
            if isinstance(acc, int):
                acc = (acc + lane) & _MASK
                acc = ((acc << 31) | (acc >> 33)) & _MASK
                acc = acc * int(_PRIME_1) & _MASK
                continue
            if owned:
                acc += np.uint64(lane)
            else:
                acc, owned = acc + np.uint64(lane), True
        else:
            acc, owned = _array_lane(key) * _PRIME_2 + (np.uint64(acc) if isinstance(acc, int) else acc), True
        high = acc >> _S33  # acc = rotate_left(acc, 31) * PRIME_1, in place (acc is this function's own)
        acc <<= _S31
        acc |= high
        acc *= _PRIME_1
    return acc


def _finish(state: npt.NDArray[np.uint64], count: int) -> FloatArray:
    """The numbers of hash states ``state`` of ``count`` keys each (``state`` is not changed)."""
    acc = state + np.uint64(count ^ (_PRIME_5 ^ 3527539))
    if bool((acc == np.uint64(_MASK)).any()):
        acc = np.where(acc == np.uint64(_MASK), np.uint64(1546275796), acc)
    acc ^= acc >> _S30  # the SplitMix64 finaliser, in place
    acc *= np.uint64(0xBF58476D1CE4E5B9)
    acc ^= acc >> _S27
    acc *= np.uint64(0x94D049BB133111EB)
    acc ^= acc >> _S31
    acc >>= _S11
    found = acc.astype(np.float64)
    found *= 1.0 / (1 << 53)
    return found


def normals(*keys: Keys) -> FloatArray:
    """``normal`` of each key tuple."""
    first, second = 1.0 - uniforms(*keys, 0), uniforms(*keys, 1)
    return _box_muller(first.ravel(), second.ravel()).reshape(second.shape)


@dataclass(frozen=True, slots=True)
class Stem:
    """The first keys of many key tuples, hashed once: ``stem(seed, ids).uniforms(k, j)`` is
    ``uniforms(seed, ids, k, j)``, bit for bit, without hashing ``(seed, ids)`` again for every
    draw (the tuple hash takes its keys in order, so the state after the shared first keys is
    the same for each). A batch of devices draws a few dozen numbers per device this way.

    >>> s = stem(1, np.array([2, 5]))
    >>> s.uniforms(3, 4).tolist() == uniforms(1, np.array([2, 5]), 3, 4).tolist()
    True

    Attributes:
        keys: the first keys.
        state: the tuple hash's state after them (a Python int while they are all ints).
    """

    keys: tuple[Keys, ...]
    state: int | npt.NDArray[np.uint64]

    @property
    def shape(self) -> tuple[int, ...]:
        """The broadcast shape of the keys (the state's: ``()`` while they are all ints)."""
        return () if isinstance(self.state, int) else self.state.shape

    def then(self, *keys: Keys) -> Stem:
        """The stem of these keys followed by ``keys``."""
        return Stem(self.keys + keys, _absorbed(self.state, keys))

    def uniforms(self, *keys: Keys) -> FloatArray:
        """``uniforms(*self.keys, *keys)``."""
        shape = self.shape
        for key in keys:
            if not isinstance(key, int) and key.shape != shape:
                shape = np.broadcast_shapes(shape, key.shape)
        every = self.keys + keys
        if math.prod(shape) <= SCALAR_UP_TO:
            return uniforms(*every) if shape else np.array(uniform(*(int(k) for k in every)))
        state = _absorbed(self.state, keys)
        assert not isinstance(state, int)
        return _finish(state if state.shape == shape else np.broadcast_to(state, shape), len(every))

    def normals(self, *keys: Keys) -> FloatArray:
        """``normals(*self.keys, *keys)``."""
        inner = self.then(*keys)
        first, second = 1.0 - inner.uniforms(0), inner.uniforms(1)
        return _box_muller(first.ravel(), second.ravel()).reshape(second.shape)

    def take(self, rows: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> Stem:
        """The stem of rows ``rows`` (indices or a mask) of one-dimensional keys (ints stay)."""
        return Stem(tuple(k if isinstance(k, int) else k[rows] for k in self.keys),
                    self.state if isinstance(self.state, int) else self.state[rows])


def stem(*keys: Keys) -> Stem:
    """The :class:`Stem` of ``keys``, the first keys of the tuples to draw for."""
    return Stem(keys, _absorbed(_PRIME_5, keys))


def _absorbed(state: int | npt.NDArray[np.uint64], keys: tuple[Keys, ...]) -> int | npt.NDArray[np.uint64]:
    """``_absorb``; numpy's overflow warnings (64-bit wrap-around is the hash's arithmetic) are
    only possible on zero-dimensional arrays (array operations wrap silently), so only those
    pay for ``np.errstate`` (a few microseconds a call)."""
    if any(not isinstance(k, int) and k.ndim == 0 for k in keys) or (not isinstance(state, int) and state.ndim == 0):
        with np.errstate(over="ignore"):
            return _absorb(state, keys)
    return _absorb(state, keys)
