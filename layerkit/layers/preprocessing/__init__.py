"""Preprocessing layers: numeric (Normalization, Rescaling, Discretization,
CategoryEncoding), image (Resizing, CenterCrop) and random augmentation (RandomFlip,
RandomRotation, RandomZoom, RandomTranslation, RandomContrast, RandomBrightness, RandomCrop)."""
from layerkit.layers.preprocessing.augment import (
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomRotation,
    RandomTranslation,
    RandomZoom,
)
from layerkit.layers.preprocessing.image import CenterCrop, Resizing
from layerkit.layers.preprocessing.numeric import (
    CategoryEncoding,
    Discretization,
    Normalization,
    Rescaling,
)

__all__ = ["Normalization", "Rescaling", "Discretization", "CategoryEncoding", "Resizing",
           "CenterCrop", "RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation",
           "RandomContrast", "RandomBrightness", "RandomCrop"]
