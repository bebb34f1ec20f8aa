"""Constructor arguments from a config that may have been written by Keras 3.

Keras 3 writes some arguments layerkit's classes do not take (``quantization_config``,
``use_ema``, ``input_axes``, ...). :func:`init_kwargs` leaves such an argument out when
its value is one for which leaving it out changes nothing, and refuses any other value
with an error naming the class and the argument: never a silently different object.
"""
from __future__ import annotations

import inspect

__all__ = ["init_kwargs"]

_ANY = object()
# Keras 3 argument -> the values that mean "feature off" (or _ANY: never matters here).
_NEUTRAL = {
    "quantization_config": (None,), "lora_rank": (None,), "lora_alpha": (None,),
    "lora_enabled": (False,), "use_gate": (False,), "sliding_window": (None,),
    "flash_attention": (None,), "input_axes": (None,), "output_axes": (None,),
    "optional": (False,), "sparse": (False, None), "ragged": (False, None),
    "zero_output_for_mask": _ANY, "use_cudnn": _ANY, "time_major": (False,),
    "synchronized": (False,), "rms_scaling": (False,), "autocast": (True,),
    "renorm": (False,), "renorm_clipping": (None,), "renorm_momentum": _ANY,
    "groups": (1,),
    "use_ema": (False,), "ema_momentum": _ANY, "ema_overwrite_frequency": (None,),
    "loss_scale_factor": (None,), "gradient_accumulation_steps": (None,),
    "is_legacy_optimizer": (False,), "jit_compile": _ANY, "decay": (0.0, None),
}
_ACCEPTED: dict = {}


def _accepted(cls) -> tuple:
    """(argument names the constructor chain takes, whether it takes any keyword)."""
    found = _ACCEPTED.get(cls)
    if found is not None:
        return found
    names: set = set()
    open_ = True
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None or klass is object:
            continue
        params = inspect.signature(init).parameters.values()
        names.update(p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
        closed = vars(klass).get("_closed_init_kwargs")
        if closed is not None:  # its **kwargs takes only these names (Layer)
            names.update(closed)
            open_ = False
            break
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            open_ = False
            break
    found = _ACCEPTED[cls] = (frozenset(names), open_)
    return found


def init_kwargs(cls, config: dict) -> dict:
    """``config`` without the Keras-only arguments ``cls`` does not take (see module doc).

    Raises:
        NotImplementedError: a Keras-only argument with a value that changes behaviour,
            naming the class, the argument and the value.
    """
    accepted, open_ = _accepted(cls)
    out = {}
    for key, value in config.items():
        neutral = _NEUTRAL.get(key)
        if neutral is None or key in accepted:
            out[key] = value
        elif neutral is _ANY or any(value is v or (type(value) is type(v) and value == v)
                                    for v in neutral):
            continue
        elif open_:
            out[key] = value
        else:
            raise NotImplementedError(
                f"{cls.__name__}: the Keras argument {key}={value!r} is not supported by "
                f"layerkit (only {key}={neutral[0]!r} is)")
    return out
