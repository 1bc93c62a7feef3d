"""SecAgg's primitives: X25519 key agreement, a pseudorandom mask generator, fixed-point codes.

* Key agreement: X25519 (from ``cryptography``), the shared secret stretched by HKDF-SHA256
  into a 32-byte seed (one per pair of devices, and one per pair for encrypting shares).
* Masks: AES-128-CTR keystream under the seed, read as unsigned 64-bit words: a PRG each side
  of a pair expands identically.
* Fixed point: v → round(v · 2^f) mod 2^64, so sums of masked vectors wrap exactly in uint64
  and decode to the sum of the rounded values while |Σ v| · 2^f < 2^63.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

FRACTION_BITS = 24
PUBLIC_KEY_BYTES = 32


def private_key(secret: bytes) -> X25519PrivateKey:
    """The X25519 private key with these 32 bytes."""
    return X25519PrivateKey.from_private_bytes(secret)


def private_bytes(key: X25519PrivateKey) -> bytes:
    """The 32 raw bytes of ``key``."""
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())


def public_bytes(key: X25519PrivateKey) -> bytes:
    """The 32 raw bytes of ``key``'s public key."""
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def agree(own: X25519PrivateKey, peer_public: bytes, purpose: bytes) -> bytes:
    """The 32-byte seed two devices share: HKDF-SHA256 of their X25519 secret, bound to ``purpose``."""
    shared = own.exchange(X25519PublicKey.from_public_bytes(peer_public))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"fedfit-secagg " + purpose).derive(shared)


def prg(seed: bytes, length: int) -> np.ndarray:
    """``length`` pseudorandom uint64 words from a 32-byte ``seed`` (AES-128-CTR keystream)."""
    encryptor = Cipher(algorithms.AES(seed[:16]), modes.CTR(seed[16:32])).encryptor()
    stream = encryptor.update(bytes(8 * length)) + encryptor.finalize()
    return np.frombuffer(stream, dtype=np.uint64).copy()


def encode(values: np.ndarray, fraction_bits: int = FRACTION_BITS) -> np.ndarray:
    """Fixed-point codes of float ``values`` in uint64 (two's complement).

    >>> decode(encode(np.array([1.5, -2.25])) + encode(np.array([0.25, 0.25])))
    array([ 1.75, -2.  ])
    """
    return np.round(values.astype(np.float64) * 2.0**fraction_bits).astype(np.int64).view(np.uint64)


def decode(codes: np.ndarray, fraction_bits: int = FRACTION_BITS) -> np.ndarray:
    """Float values of uint64 fixed-point ``codes``."""
    return codes.view(np.int64).astype(np.float64) / 2.0**fraction_bits
