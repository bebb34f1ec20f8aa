"""NumPy kernels behind layerkit's op records.

A kernel is a function of NumPy arrays and plain attributes that returns NumPy arrays:
no Tensors, no tapes, no records. The op records in ``layerkit/primitives`` call them as their
forwards and write their gradient rules with lk ops; the kernels here only compute.
This package imports NumPy, the standard library and the tuned constants of
``layerkit._core.tuning`` only (tests/test_layering.py).

- :mod:`.activation`: leaky ReLU, gelu and its gradient, softplus (float32 block-wise).
- :mod:`.blockwise`: the one block-wise runner (a ufunc chain per cache-sized block, on
  one thread or two) and the kernel thread count.
- :mod:`.conv`: 2-D convolutions and their two gradients (algorithm chosen per shape,
  batch-chunked so no patch matrix grows with the whole batch), depthwise convolutions.
- :mod:`.conv_nd`: convolutions over any number of spatial axes (3-D).
- :mod:`.pool`: max and average pooling and their gradients.
- :mod:`.rnn`: LSTM, GRU and simple RNN sequence loops, forward and BPTT.
- :mod:`.scratch`: per-thread reusable buffers and the zero-framed copies (padding,
  stride-stuffing) the convolution kernels read from.
- :mod:`.special`: ``erf`` (float32 and float64 polynomial fits, block-wise).
"""
