"""Small trackable objects for checkpoint tests (no layers/optimizers/data needed)."""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np

import layerkit as lk
from layerkit.checkpoint import format as fmt
from layerkit.checkpoint import trackable


class Module:
    """Sub-modules and Variables by attribute name; variables may be created later."""

    def __init__(self, **attrs) -> None:
        self.__dict__.update(attrs)

    def _checkpoint_children(self) -> dict:
        return {k: v for k, v in vars(self).items()
                if isinstance(v, (Module, Stateful, list, dict))}

    def _checkpoint_variables(self) -> dict:
        return {k: v for k, v in vars(self).items() if isinstance(v, lk.Variable)}

    def create(self, name: str, value) -> lk.Variable:
        """Create a variable the way Layer.add_weight does (applying a deferred value)."""
        var = lk.Variable(value, name=name)
        restored = trackable.take_deferred(self, name)
        if restored is not None:
            var.assign(restored)
        setattr(self, name, var)
        return var


class Stateful:
    """Non-variable state through get_state/set_state (like a data iterator)."""

    def __init__(self, state=None, fail: bool = False) -> None:
        self.state = state
        self.fail = fail

    def get_state(self):
        return self.state

    def set_state(self, state) -> None:
        if self.fail:
            raise RuntimeError("set_state refused")
        self.state = state


def values(obj) -> dict:
    """{name: array copy} of a Module's variables, recursively."""
    out = {}
    for k, v in vars(obj).items():
        if isinstance(v, lk.Variable):
            out[k] = np.array(v.numpy())
        elif isinstance(v, Module):
            out.update({f"{k}/{kk}": vv for kk, vv in values(v).items()})
    return out


def rewrite_manifest(path, edit, raw_manifest: bytes | None = None):
    """Rewrite the manifest with ``edit(doc)`` (or replace it by ``raw_manifest``) and
    give the file valid header and manifest checksums again, so that only the reader's
    checks of the manifest's content can catch the change."""
    raw = path.read_bytes()
    h = list(fmt._HEADER.unpack(raw[:64]))
    mlen, data_off, data_len = h[3], h[6], h[7]
    if raw_manifest is None:
        doc = json.loads(raw[64:64 + mlen])
        edit(doc)
        manifest = json.dumps(doc).encode()
    else:
        manifest = raw_manifest
    new_off = fmt._align(64 + len(manifest))
    h[3], h[4], h[6], h[8] = len(manifest), zlib.crc32(manifest), new_off, new_off + data_len
    head = fmt._HEADER.pack(*h)
    head = head[:-4] + struct.pack("<I", zlib.crc32(head[:-4]))
    path.write_bytes(head + manifest + bytes(new_off - 64 - len(manifest))
                     + raw[data_off:data_off + data_len])
