"""layerkit._core.nest: the one nested-structure helper (tf.nest / keras.tree rules), with
its options for dict key order and lists as leaves."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

from layerkit._core import nest

Point = namedtuple("Point", ["x", "y"])


def test_dicts_flatten_in_sorted_key_order_by_default_like_tf_nest():
    s = {"b": 1, "a": 2, "c": {"z": 3, "y": 4}}
    assert nest.flatten(s) == [2, 1, 4, 3]
    # integer keys sort as numbers (not as their text: 2 before 10)
    assert nest.flatten({10: "ten", 2: "two"}) == ["two", "ten"]


def test_insertion_order_on_request_and_for_unsortable_keys():
    s = {"b": 1, "a": 2, "c": {"z": 3, "y": 4}}
    assert nest.flatten(s, sort_keys=False) == [1, 2, 3, 4]
    assert nest.flatten({1: "one", "a": "a", 0: "zero"}) == ["one", "a", "zero"]


def test_pack_sequence_as_inverts_flatten_and_keeps_each_dicts_own_order():
    s = {"b": [1, (2, 3)], "a": Point(4, {"q": 5, "p": 6})}
    for sort_keys in (True, False):
        flat = nest.flatten(s, sort_keys=sort_keys)
        again = nest.pack_sequence_as(s, flat, sort_keys=sort_keys)
        assert again == s and list(again) == ["b", "a"]
        assert type(again["a"]) is Point and type(again["b"]) is list
        assert type(again["b"][1]) is tuple
    doubled = nest.pack_sequence_as(s, [10 * v for v in nest.flatten(s)])
    assert doubled == {"b": [10, (20, 30)], "a": Point(40, {"q": 50, "p": 60})}


def test_dict_subclasses_and_namedtuples_keep_their_types():
    od = OrderedDict([("y", 1), ("x", 2)])
    out = nest.map_structure(lambda v: v + 1, od)
    assert type(out) is OrderedDict and list(out.items()) == [("y", 2), ("x", 3)]
    p = nest.map_structure(lambda v: -v, Point(1, (2, 3)))
    assert type(p) is Point and p == Point(-1, (-2, -3))


def test_none_is_a_leaf():
    s = (None, {"a": None, "b": [1, None]})
    assert nest.flatten(s) == [None, None, 1, None]
    assert nest.pack_sequence_as(s, [1, 2, 3, 4]) == (1, {"a": 2, "b": [3, 4]})
    assert nest.flatten(None) == [None]
    assert nest.map_structure(lambda v: v is None, s) == (True, {"a": True, "b": [False, True]})


def test_lists_are_leaves_as_in_tf_data():
    s = ([1, 2], {"a": (3, [4])})
    assert nest.flatten(s, lists_are_leaves=True) == [[1, 2], 3, [4]]
    assert not nest.is_nested([1], lists_are_leaves=True) and nest.is_nested([1])
    assert nest.is_nested((1,), lists_are_leaves=True) and not nest.is_nested(np.ones(2))


def test_map_structure_calls_fn_in_flatten_order():
    seen = []
    nest.map_structure(seen.append, {"b": 1, "a": (2, 3)})
    assert seen == [2, 3, 1]
    seen.clear()
    nest.map_structure(seen.append, {"b": 1, "a": (2, 3)}, sort_keys=False)
    assert seen == [1, 2, 3]


def test_map_structure_over_several_structures():
    out = nest.map_structure(lambda a, b: a * b, {"x": (1, 2), "y": 3}, {"y": 5, "x": (7, 11)})
    assert out == {"x": (7, 22), "y": 15}
    with pytest.raises(ValueError, match=r"lengths differ: 2 and 3"):
        nest.map_structure(lambda a, b: a, (1, 2), (1, 2, 3))


def test_pack_sequence_as_with_the_wrong_number_of_leaves_raises():
    with pytest.raises(ValueError, match=r"structure has 3 leaves but the flat sequence has 2"):
        nest.pack_sequence_as((1, [2, 3]), [1, 2])
    with pytest.raises(ValueError, match=r"structure has 3 leaves but the flat sequence has 4"):
        nest.pack_sequence_as((1, [2, 3]), [1, 2, 3, 4])


def test_assert_same_structure_names_the_first_difference():
    nest.assert_same_structure({"a": (1, [2])}, {"a": (5, [6])})
    with pytest.raises(ValueError, match=r"at \['a'\]\[1\] the lengths differ: 1 and 2"):
        nest.assert_same_structure({"a": (1, [2])}, {"a": (5, [6, 7])})
    with pytest.raises(ValueError, match=r"dict keys differ: \['a'\] and \['b'\]"):
        nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match=r"at \[0\] the first holds int, the second tuple"):
        nest.assert_same_structure([1], [(1,)])
    with pytest.raises(TypeError, match=r"types differ: list and tuple"):
        nest.assert_same_structure([1, 2], (1, 2))
    nest.assert_same_structure([1, 2], (1, 2), check_types=False)
    with pytest.raises(TypeError, match=r"types differ: Point and tuple"):
        nest.assert_same_structure(Point(1, 2), (1, 2))
    assert nest.same_structure([1, [2]], [3, [4]])
    assert not nest.same_structure([1, [2]], [3, 4])
    # with lists as leaves, lists of any length match each other
    assert nest.same_structure(([1],), ([1, 2],), lists_are_leaves=True)


def test_flatten_up_to_keeps_sub_structures_under_the_shallow_leaves():
    shallow = {"a": None, "b": (None, None)}
    deep = {"a": [1, 2], "b": ((3, 4), {"c": 5}), "extra": 6}
    assert nest.flatten_up_to(shallow, deep) == [[1, 2], (3, 4), {"c": 5}]
    with pytest.raises(ValueError, match=r"key 'b' is missing"):
        nest.flatten_up_to(shallow, {"a": 1})
    with pytest.raises(ValueError, match=r"expected a sequence of 2 items, received 3"):
        nest.flatten_up_to(shallow, {"a": 1, "b": (1, 2, 3)})
    with pytest.raises(TypeError, match=r"expected a dict with keys \['a', 'b'\]"):
        nest.flatten_up_to(shallow, [1, 2])


def test_no_other_module_defines_its_own_structure_walker():
    # One helper, with explicit options, instead of copies that order dict keys differently.
    import ast
    import pathlib

    root = pathlib.Path(nest.__file__).resolve().parents[1]
    names = {"flatten", "_flatten", "pack_like", "pack_sequence_as", "map_structure",
             "flatten_up_to", "same_structure", "assert_same_structure", "_leaves",
             "_flatten_like", "_flatten_option"}
    # lk.nest and lk.keras.tree are the public faces of this helper: they delegate to it.
    # keras/backend_legacy.py's flatten is tf.keras 2's K.flatten: a tensor reshape.
    facades = {root / "nest.py", root / "keras" / "tree.py", root / "keras" / "backend_legacy.py"}
    found = [f"{path.relative_to(root)}: {node.name}"
             for path in root.rglob("*.py")
             if path != pathlib.Path(nest.__file__).resolve() and path not in facades
             for node in ast.parse(path.read_text()).body
             if isinstance(node, ast.FunctionDef) and node.name in names]
    assert not found, found
