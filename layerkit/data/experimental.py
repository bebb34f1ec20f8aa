"""``lk.data.experimental``: tf.data's experimental names that layerkit has."""
from layerkit.data.options import AutoShardPolicy, DistributeOptions

__all__ = ["AutoShardPolicy", "DistributeOptions"]
