"""Every public name of shared/API.md exists (with the stated parameters where given)."""
import inspect

import pytest

import layerkit as lk

CORE = """Tensor Variable constant convert_to_tensor cast
zeros ones zeros_like ones_like fill eye range linspace one_hot
add subtract multiply divide floordiv mod negative pow square sqrt rsqrt exp expm1 log log1p
abs sign maximum minimum sin cos tan tanh sigmoid erf floor ceil round clip_by_value where
equal not_equal less less_equal greater greater_equal logical_and logical_or logical_not
isfinite isnan
reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_logsumexp reduce_variance
reduce_std reduce_all reduce_any argmax argmin cumsum
matmul tensordot einsum transpose reshape expand_dims squeeze concat stack unstack split tile
pad gather gather_nd broadcast_to slice reverse norm
GradientTape gradients_function value_and_gradients_function custom_gradient stop_gradient
function TensorSpec Model Sequential Input Checkpoint CheckpointManager latest_checkpoint
""".split()

NN = """relu relu6 leaky_relu elu selu gelu softplus silu softmax log_softmax conv2d
conv2d_transpose depthwise_conv2d max_pool2d avg_pool2d dropout moments batch_normalization
l2_normalize softmax_cross_entropy_with_logits sparse_softmax_cross_entropy_with_logits
sigmoid_cross_entropy_with_logits""".split()

RANDOM = "set_seed normal uniform truncated_normal categorical shuffle Generator".split()

SIGNATURES = {
    "matmul": ["a", "b", "transpose_a", "transpose_b"],
    "transpose": ["x", "perm"],
    "gather": ["params", "indices", "axis"],
    "reduce_sum": ["x", "axis", "keepdims"],
    "where": ["cond", "x", "y"] ,
    "gradients_function": ["f", "params"],
    "value_and_gradients_function": ["f", "params"],
    "constant": ["value", "dtype"],
    "function": ["f", "input_signature", "jit"],
    "convert_to_tensor": ["value", "dtype"],
}


@pytest.mark.parametrize("name", CORE)
def test_core_name(name):
    assert hasattr(lk, name), f"lk.{name} is missing"


@pytest.mark.parametrize("name", NN)
def test_nn_name(name):
    assert hasattr(lk.nn, name), f"lk.nn.{name} is missing"


@pytest.mark.parametrize("name", RANDOM)
def test_random_name(name):
    assert hasattr(lk.random, name), f"lk.random.{name} is missing"


@pytest.mark.parametrize("name,params", sorted(SIGNATURES.items()))
def test_signature(name, params):
    sig = inspect.signature(getattr(lk, name))
    assert list(sig.parameters)[: len(params)] == params


def test_gradient_tape_signature():
    sig = inspect.signature(lk.GradientTape)
    assert list(sig.parameters) == ["persistent", "watch_accessed_variables"]
    g = inspect.signature(lk.GradientTape.gradient)
    assert list(g.parameters) == ["self", "target", "sources", "output_gradients",
                                  "unconnected_gradients"]


def test_variable_signature():
    sig = inspect.signature(lk.Variable)
    assert list(sig.parameters) == ["initial_value", "trainable", "name", "dtype"]
