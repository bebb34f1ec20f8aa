"""``lk.summary.experimental``: the default step (``tf.summary.experimental``)."""
from layerkit.summary._summary import get_step, set_step, summary_scope

__all__ = ["set_step", "get_step", "summary_scope"]
