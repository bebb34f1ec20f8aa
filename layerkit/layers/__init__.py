"""Keras-compatible layers: the ``Layer`` base class and the built-in layers.

Examples:
    >>> import layerkit as lk
    >>> layer = lk.layers.Dense(3, activation="relu")
    >>> layer(lk.ones((2, 4))).shape
    (2, 3)
"""
from layerkit.layers.activation_layers import ELU, LeakyReLU, PReLU, ReLU, Softmax
from layerkit.layers.attention import AdditiveAttention, Attention, MultiHeadAttention
from layerkit.layers.conv import Conv2D, Conv2DTranspose, DepthwiseConv2D
from layerkit.layers.conv_nd import (
    Conv1D,
    Conv1DTranspose,
    Conv3D,
    Conv3DTranspose,
    DepthwiseConv1D,
    SeparableConv1D,
    SeparableConv2D,
)
from layerkit.layers.core import (
    Activation,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    InputLayer,
    Lambda,
    Reshape,
)
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer, get_keras_mask, set_keras_mask
from layerkit.layers.masking import Masking
from layerkit.layers.merge import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    dot,
    maximum,
    minimum,
    multiply,
    subtract,
)
from layerkit.layers.normalization import (
    BatchNormalization,
    GroupNormalization,
    LayerNormalization,
    UnitNormalization,
)
from layerkit.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAveragePooling3D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    GlobalMaxPooling3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
)
from layerkit.layers.preprocessing import (
    CategoryEncoding,
    CenterCrop,
    Discretization,
    Normalization,
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomRotation,
    RandomTranslation,
    RandomZoom,
    Rescaling,
    Resizing,
)
from layerkit.layers.recurrent import GRU, LSTM, RNN, Bidirectional, SimpleRNN, TimeDistributed
from layerkit.layers.recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from layerkit.layers.regularization import (
    ActivityRegularization,
    AlphaDropout,
    GaussianDropout,
    GaussianNoise,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from layerkit.layers.reshaping import Permute, RepeatVector
from layerkit.layers.reshaping_spatial import (
    Cropping1D,
    Cropping2D,
    Cropping3D,
    UpSampling1D,
    UpSampling2D,
    UpSampling3D,
    ZeroPadding1D,
    ZeroPadding2D,
    ZeroPadding3D,
)
from layerkit.layers.symbolic import Node, SymbolicTensor
from layerkit.layers.tracking import reset_uids

# Keras aliases
MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
MaxPool1D, MaxPool3D = MaxPooling1D, MaxPooling3D
AvgPool1D, AvgPool3D = AveragePooling1D, AveragePooling3D
GlobalMaxPool1D, GlobalMaxPool3D = GlobalMaxPooling1D, GlobalMaxPooling3D
GlobalAvgPool1D, GlobalAvgPool3D = GlobalAveragePooling1D, GlobalAveragePooling3D
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution1DTranspose, Convolution2DTranspose, Convolution3DTranspose = (
    Conv1DTranspose, Conv2DTranspose, Conv3DTranspose)
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D


def _experimental_namespace():
    """tf.keras 2.x's ``layers.experimental.preprocessing`` spelling of the preprocessing
    layers (the same classes)."""
    from types import ModuleType

    pre = ModuleType("layerkit.layers.experimental.preprocessing",
                     "tf.keras 2.x's spelling of the preprocessing layers.")
    for cls in (CategoryEncoding, CenterCrop, Discretization, Normalization, RandomContrast,
                RandomBrightness, RandomCrop, RandomFlip, RandomRotation, RandomTranslation,
                RandomZoom, Rescaling, Resizing):
        setattr(pre, cls.__name__, cls)
    exp = ModuleType("layerkit.layers.experimental", "tf.keras 2.x's layers.experimental.")
    exp.preprocessing = pre
    return exp


experimental = _experimental_namespace()


def serialize(layer: Layer) -> dict:
    """Keras's config of a layer (``{"module", "class_name", "config", ...}``), as
    ``keras.layers.serialize``; :func:`deserialize` inverts it."""
    from layerkit.saving import serialize_keras_object

    return serialize_keras_object(layer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """A new layer from :func:`serialize`'s config (``custom_objects`` and the
    ``lk.saving`` registry find custom classes), as ``keras.layers.deserialize``."""
    from layerkit.layers.layer import layer_from_config

    return layer_from_config(config, custom_objects)


__all__ = ["serialize", "deserialize", "experimental",
    "Layer", "InputSpec", "SymbolicTensor", "Node", "reset_uids",
    "Dense", "Activation", "Flatten", "Reshape", "Dropout", "Embedding",
    "Conv2D", "Conv2DTranspose", "DepthwiseConv2D",
    "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D",
    "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D", "GlobalMaxPool2D",
    "BatchNormalization", "LayerNormalization", "Add", "Concatenate",
    "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN", "LSTM", "GRU",
    "Bidirectional", "MultiHeadAttention",
    # Keras-surface layers of issue #14 (activations, core, reshaping, merging,
    # regularization, normalization, masking, stacked RNNs, attention)
    "ReLU", "LeakyReLU", "PReLU", "ELU", "Softmax", "Identity", "Lambda", "InputLayer",
    "RepeatVector", "Permute", "TimeDistributed",
    "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Dot",
    "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot",
    "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
    "GaussianDropout", "AlphaDropout", "ActivityRegularization",
    "GroupNormalization", "UnitNormalization", "Masking", "get_keras_mask", "set_keras_mask",
    "StackedRNNCells", "Attention", "AdditiveAttention",
    # spatial and preprocessing layers (issue #14)
    "Conv1D", "Conv3D", "Conv1DTranspose", "Conv3DTranspose", "DepthwiseConv1D",
    "SeparableConv1D", "SeparableConv2D", "MaxPooling1D", "MaxPooling3D", "AveragePooling1D",
    "AveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling3D", "GlobalAveragePooling1D",
    "GlobalAveragePooling3D", "MaxPool1D", "MaxPool3D", "AvgPool1D", "AvgPool3D",
    "GlobalMaxPool1D", "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool3D",
    "Convolution1D", "Convolution2D", "Convolution3D", "Convolution1DTranspose",
    "Convolution2DTranspose", "Convolution3DTranspose", "SeparableConvolution1D",
    "SeparableConvolution2D", "UpSampling1D", "UpSampling2D", "UpSampling3D",
    "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "Cropping1D", "Cropping2D",
    "Cropping3D", "Normalization", "Rescaling", "Discretization", "CategoryEncoding",
    "Resizing", "CenterCrop", "RandomFlip", "RandomRotation", "RandomZoom",
    "RandomTranslation", "RandomContrast", "RandomBrightness", "RandomCrop",
]


def __getattr__(name: str):
    from layerkit._missing import missing_attribute

    raise missing_attribute("layerkit.layers", name)
