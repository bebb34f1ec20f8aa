"""``lk.distribute.experimental``: tf.distribute's experimental names that layerkit has."""
from layerkit.distribute.strategy import CommunicationOptions

__all__ = ["CommunicationOptions"]
