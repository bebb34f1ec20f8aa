"""lk.nest (tf.nest) and lk.keras.tree (keras.tree): the public faces of the one
nested-structure helper."""
import collections

import pytest

import layerkit as lk

N, T = lk.nest, lk.keras.tree
Point = collections.namedtuple("Point", "x y")


def test_tf_nest_functions():
    s = {"b": [1, Point(2, 3)], "a": (4, None)}
    assert N.flatten(s) == [4, None, 1, 2, 3]
    again = N.pack_sequence_as(s, [40, None, 10, 20, 30])
    assert again == {"b": [10, Point(20, 30)], "a": (40, None)}
    assert isinstance(again["b"][1], Point)
    assert N.map_structure(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
    assert N.is_nested([1]) and N.is_nested({"a": 1}) and not N.is_nested(lk.ones(2))
    N.assert_same_structure((1, [2]), (3, [4]))
    with pytest.raises(ValueError, match="lengths differ"):
        N.assert_same_structure((1, 2), (1,))
    with pytest.raises(TypeError, match="types differ"):
        N.map_structure(lambda a, b: a, (1, 2), [1, 2])
    assert N.map_structure(lambda a, b: a, (1, 2), [1, 2], check_types=False) == (1, 2)
    with pytest.raises(ValueError):
        N.pack_sequence_as((1, 2), [1])


def test_keras_tree_functions():
    s = {"b": [1, 2], "a": 3}
    assert T.flatten(s) == [3, 1, 2]
    assert T.flatten_with_path(s) == [(("a",), 3), (("b", 0), 1), (("b", 1), 2)]
    assert T.map_structure(lambda v: v * 2, s) == {"b": [2, 4], "a": 6}
    assert T.map_structure_up_to((None, None), len, ([1, 2], [3])) == (2, 1)
    assert T.lists_to_tuples({"a": [1, [2, Point(3, [4])]]}) == {"a": (1, (2, Point(3, (4,))))}
    assert T.traverse(lambda v: v + 1 if isinstance(v, int) else None, {"a": [1, 2]}) == \
        {"a": [2, 3]}
    sizes = []
    T.traverse(lambda v: sizes.append(len(v)) if isinstance(v, list) else None, [[1], [2, 3]],
               top_down=False)
    assert sizes == [1, 2, 2]
    assert T.pack_sequence_as([0, 0], [5, 6]) == [5, 6] and T.is_nested((1,))
