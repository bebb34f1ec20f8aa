"""shuffle: a fixed-size random buffer, as in tf.data.

The buffer first fills with ``buffer_size`` elements. Each step then emits the element
in a uniformly drawn slot and puts the next input element in that slot; when the input
ends the rest of the buffer comes out in a random permutation. Memory is bounded by the
buffer.

Slot indices are drawn from NumPy in fixed blocks of 1,024, so the order depends only on
the seed, never on how the consumer pulls. Over inputs that speak the chunk protocol with
numeric elements the buffer is a set of stacked arrays and a whole chunk of steps runs
vectorised (the slot each step reads is found with one stable sort), which is what makes
``shuffle(...).batch(...)`` over in-memory data run at several million elements/s.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import wrap
from layerkit.data import structure as _st
from layerkit.data.node import Node, NodeIterator
from layerkit.primitives.random import next_seed

_BLOCK = 1024


class ShuffleNode(Node):
    """Randomly shuffles the input with a buffer of ``buffer_size`` elements."""

    name = "shuffle"

    def __init__(self, source: Node, buffer_size: int, seed, reshuffle_each_iteration) -> None:
        super().__init__(source)
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) \
                or buffer_size < 1:
            raise ValueError(f"Dataset.shuffle: buffer_size must be a positive integer, "
                             f"received {buffer_size!r}")
        self.buffer_size = int(buffer_size)
        # Drawn at construction so that lk.random.set_seed(...) before building the
        # pipeline makes every pass's order reproducible.
        self.seed = next_seed() if seed is None else int(seed)
        self.reshuffle = reshuffle_each_iteration is None or bool(reshuffle_each_iteration)

    def make_iterator(self, ctx):
        return ShuffleIterator(self, self.inputs[0].make_iterator(ctx), ctx)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        return self.inputs[0].element_spec()

    def static_chunk_spec(self):
        return self.inputs[0].static_chunk_spec()


def _rng_state(rng: np.random.Generator) -> dict:
    st = rng.bit_generator.state
    return {"state": str(st["state"]["state"]), "inc": str(st["state"]["inc"]),
            "has_uint32": int(st["has_uint32"]), "uinteger": int(st["uinteger"])}


def _set_rng_state(rng: np.random.Generator, s: dict) -> None:
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": int(s["state"]), "inc": int(s["inc"])},
        "has_uint32": int(s["has_uint32"]), "uinteger": int(s["uinteger"]),
    }


class ShuffleIterator(NodeIterator):
    __slots__ = ("_up", "_node", "_ctx", "_seed", "_b", "_top", "_inner", "_rng", "_draws",
                 "_dpos", "_phase", "_columnar", "_buf", "_count", "_order", "_opos", "codec",
                 "_chunk_fallback")
    kind = "shuffle"

    def __init__(self, node: ShuffleNode, up: NodeIterator, ctx) -> None:
        self._up = up
        self._node = node
        self._ctx = ctx
        self._b = node.buffer_size
        top, inner = ctx.epoch(node)
        self._seed = ctx.seed(node, node.seed)
        self._top, self._inner = (top, inner) if node.reshuffle else (0, 0)
        self._rng = self._new_rng()
        self._draws = np.zeros(0, np.int64)
        self._dpos = 0
        self._phase = "fill"
        self._columnar = up.supports_chunks()
        self._chunk_fallback = False
        self._buf = None  # list of arrays (columnar) or list of elements
        self._count = 0
        self._order = None  # drain order (array of buffer positions)
        self._opos = 0
        self.codec = None

    def _new_rng(self) -> np.random.Generator:
        # Without reshuffling every pass uses the same stream, so the same order.
        entropy = [self._seed, self._top, self._inner] if self._node.reshuffle else [self._seed]
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))

    # ---- random slots -----------------------------------------------------------------------
    def _take_draws(self, k: int) -> np.ndarray:
        avail = len(self._draws) - self._dpos
        if avail < k:
            blocks = [self._draws[self._dpos:]]
            while avail < k:
                blocks.append(self._rng.integers(0, self._b, size=_BLOCK, dtype=np.int64))
                avail += _BLOCK
            self._draws = np.concatenate(blocks)
            self._dpos = 0
        d = self._draws[self._dpos:self._dpos + k]
        self._dpos += k
        return d

    def _start_drain(self) -> None:
        self._phase = "drain"
        self._order = self._rng.permutation(self._count)
        self._opos = 0

    # ---- filling ----------------------------------------------------------------------------
    def _fill(self) -> None:
        if self._columnar:
            self._fill_columnar()
        else:
            up = self._up
            buf = self._buf = self._buf if self._buf is not None else []
            while len(buf) < self._b:
                try:
                    buf.append(next(up))
                except StopIteration:
                    self._count = len(buf)
                    self._start_drain()
                    return
            self._count = len(buf)
        if self._phase == "fill":
            self._phase = "steady"

    def _fill_columnar(self) -> None:
        up = self._up
        while self._count < self._b:
            c = up.next_chunk(self._b - self._count)
            if c is None:
                self._start_drain()
                return
            if self._buf is None:
                if any(a.dtype.kind in "SUO" for a in c):
                    self._to_list_mode(c)  # strings vary in width: keep whole elements
                    return self._fill()
                self.codec = up.codec
                cap = min(self._b, max(_BLOCK, len(c[0])))
                self._buf = [np.empty((cap,) + a.shape[1:], a.dtype) for a in c]
            self._append_rows(c)

    def _append_rows(self, c: list) -> None:
        k = len(c[0])
        need = self._count + k
        if need > len(self._buf[0]):
            cap = min(self._b, max(need, 2 * len(self._buf[0])))
            grown = []
            for a in self._buf:
                g = np.empty((cap,) + a.shape[1:], a.dtype)
                g[:self._count] = a[:self._count]
                grown.append(g)
            self._buf = grown
        for b, a in zip(self._buf, c):
            self._check_leaf(b, a)
            b[self._count:need] = a
        self._count = need

    def _check_leaf(self, b: np.ndarray, a: np.ndarray) -> None:
        if a.dtype != b.dtype or a.shape[1:] != b.shape[1:]:
            raise TypeError(
                f"Dataset.shuffle: the input changed element type mid-stream: "
                f"{b.dtype.name}{list(b.shape[1:])} then {a.dtype.name}{list(a.shape[1:])}")

    def _to_list_mode(self, c: list) -> None:
        codec = self.codec = self._up.codec
        self._columnar = False
        self._chunk_fallback = True
        self._buf = [codec.pack(_st.row_of(c, i)) for i in range(len(c[0]))]
        self._count = len(self._buf)

    # ---- emitting ---------------------------------------------------------------------------
    def __next__(self):
        if self._phase == "fill":
            self._fill()
        if self._columnar:
            c = self.next_chunk(1)
            if c is None:
                raise StopIteration
            return self.codec.pack([wrap(a[0, ...]) for a in c])
        buf = self._buf
        if self._phase == "steady":
            try:
                x = next(self._up)
            except StopIteration:
                self._start_drain()
            else:
                j = int(self._take_draws(1)[0])
                out = buf[j]
                buf[j] = x
                return out
        if self._opos >= self._count:
            raise StopIteration
        k = int(self._order[self._opos])
        self._opos += 1
        out = buf[k]
        buf[k] = None
        return out

    def supports_chunks(self) -> bool:
        return self._columnar or self._chunk_fallback

    def next_chunk(self, n: int):
        if self._phase == "fill":
            self._fill()
        if not self._columnar:  # the input turned out to hold strings
            return _chunk_from_elements(self, n)
        if self._phase == "steady":
            x = self._up.next_chunk(n)
            if x is None:
                self._start_drain()
            else:
                return self._steady(x)
        if self._opos >= self._count:
            return None
        sel = self._order[self._opos:self._opos + n]
        self._opos += len(sel)
        return [b[sel] for b in self._buf]

    def _steady(self, x: list) -> list:
        k = len(x[0])
        j = self._take_draws(k)
        buf = self._buf
        for b, a in zip(buf, x):
            self._check_leaf(b, a)
        if k == 1:
            s = int(j[0])
            out = [b[s:s + 1].copy() for b in buf]
            for b, a in zip(buf, x):
                b[s] = a[0]
            return out
        # Step t emits slot j[t] and refills it with x[t]. The value read at step t is the
        # buffer's old content unless an earlier step of this chunk wrote the same slot;
        # a stable sort groups equal slots in step order, so the previous member of a
        # group is the latest earlier writer.
        order = np.argsort(j, kind="stable")
        sj = j[order]
        same = sj[1:] == sj[:-1]
        prev = np.full(k, -1, np.int64)
        pos = np.flatnonzero(same) + 1
        prev[order[pos]] = order[pos - 1]
        reread = prev >= 0
        last = np.ones(k, bool)
        last[:-1] = ~same
        wslots = sj[last]
        widx = order[last]
        any_reread = bool(reread.any())
        out = []
        for b, a in zip(buf, x):
            o = b[j]
            if any_reread:
                o[reread] = a[prev[reread]]
            b[wslots] = a[widx]
            out.append(o)
        return out

    # ---- state ------------------------------------------------------------------------------
    def get_state(self) -> dict:
        # In the drain phase only the elements still to come are saved, in output order.
        draining = self._phase == "drain"
        rest = self._order[self._opos:] if draining else None
        if self._buf is None:
            buf = None
        elif self._columnar:
            rows = [b[rest] if draining else b[:self._count].copy() for b in self._buf]
            buf = {"columnar": rows,
                   "template": _st.encode(self.codec.pack([np.zeros(0)] * self.codec.n))}
        else:
            elems = [self._buf[int(i)] for i in rest] if draining else list(self._buf)
            buf = {"elements": _st.encode_elements(elems)}
        return {"node": self.kind, "top": self._top, "inner": self._inner, "seed": self._seed,
                "rng": _rng_state(self._rng), "draws": self._draws[self._dpos:].copy(),
                "phase": self._phase, "columnar": self._columnar, "buffer": buf,
                "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        phase, columnar, buf = state["phase"], state["columnar"], state["buffer"]
        draws = np.asarray(state["draws"])
        _check_shuffle_state(phase, columnar, buf, draws, self._b)
        self._top, self._inner = int(state["top"]), int(state["inner"])
        self._seed = int(state["seed"])
        self._ctx.restore(self._node, self._seed, self._top, self._inner)
        self._rng = self._new_rng()
        _set_rng_state(self._rng, state["rng"])
        self._draws = draws.astype(np.int64)
        self._dpos = 0
        self._phase = phase
        self._columnar = columnar
        self._up.set_state(state["input"])
        if buf is None:
            self._buf, self._count = None, 0
        elif columnar:
            self.codec = _st.Codec(_st.decode(buf["template"]))
            self._buf = [np.array(a) for a in buf["columnar"]]
            if len(self._buf) != self.codec.n or len({len(a) for a in self._buf}) != 1:
                raise ValueError(f"the buffer holds {len(self._buf)} columns of lengths "
                                 f"{[len(a) for a in self._buf]} for {self.codec.n} leaves")
            self._count = len(self._buf[0])
        else:
            self._buf = _st.decode_elements(buf["elements"])
            self._count = len(self._buf)
            self.codec = _st.Codec(self._buf[0]) if self._buf else None
        if self._count > self._b or (phase == "steady" and self._count != self._b):
            raise ValueError(f"the buffer holds {self._count} elements in the {phase!r} phase "
                             f"with buffer_size={self._b}")
        self._order = np.arange(self._count) if self._phase == "drain" else None
        self._opos = 0


def _check_shuffle_state(phase, columnar, buf, draws: np.ndarray, size: int) -> None:
    if phase not in ("fill", "steady", "drain"):
        raise ValueError(f"unknown phase {phase!r}")
    if not isinstance(columnar, bool):
        raise ValueError(f"'columnar' must be a bool, received {columnar!r}")
    if draws.ndim != 1 or (draws.size and (draws.dtype.kind not in "iu" or draws.min() < 0
                                           or draws.max() >= size)):
        raise ValueError(f"'draws' must be a 1-D array of slots in [0, {size}), received "
                         f"{draws.dtype.name}{list(draws.shape)}")
    if (buf is None) != (phase == "fill"):
        raise ValueError(f"a buffer {'is missing' if buf is None else 'is unexpected'} in "
                         f"the {phase!r} phase")
    if buf is not None and (not isinstance(buf, dict)
                            or ("columnar" if columnar else "elements") not in buf):
        raise ValueError(f"the buffer must be a dict with "
                         f"{'columnar' if columnar else 'elements'!r}")


def _chunk_from_elements(it: ShuffleIterator, n: int):
    """A chunk stacked from single elements (list mode, when batch asked for chunks)."""
    elems = []
    for _ in range(n):
        try:
            elems.append(next(it))
        except StopIteration:
            break
    if not elems:
        return None
    if it.codec is None:
        it.codec = _st.Codec(elems[0])
    return _st.stack(elems, it.codec, "Dataset.shuffle")
