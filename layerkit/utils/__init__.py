"""``lk.utils``: Keras 3's ``keras.utils`` helpers."""
from layerkit.utils.progbar import Progbar

__all__ = ["Progbar"]
