"""Keras-compatible layers: the ``Layer`` base class and the built-in layers.

Example:
    >>> import layerkit as lk
    >>> layer = lk.layers.Dense(3, activation="relu")
    >>> layer(lk.ones((2, 4))).shape
    (2, 3)
"""
from layerkit.layers.attention import MultiHeadAttention
from layerkit.layers.conv import Conv2D, Conv2DTranspose, DepthwiseConv2D
from layerkit.layers.core import Activation, Dense, Dropout, Embedding, Flatten, Reshape
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.layers.merge import Add, Concatenate
from layerkit.layers.normalization import BatchNormalization, LayerNormalization
from layerkit.layers.pooling import (
    AveragePooling2D,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPooling2D,
)
from layerkit.layers.recurrent import GRU, LSTM, RNN, Bidirectional, SimpleRNN
from layerkit.layers.recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell
from layerkit.layers.symbolic import Node, SymbolicTensor
from layerkit.layers.tracking import reset_uids

# Keras aliases
MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D

__all__ = [
    "Layer", "InputSpec", "SymbolicTensor", "Node", "reset_uids",
    "Dense", "Activation", "Flatten", "Reshape", "Dropout", "Embedding",
    "Conv2D", "Conv2DTranspose", "DepthwiseConv2D",
    "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D",
    "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D", "GlobalMaxPool2D",
    "BatchNormalization", "LayerNormalization", "Add", "Concatenate",
    "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN", "LSTM", "GRU",
    "Bidirectional", "MultiHeadAttention",
]
