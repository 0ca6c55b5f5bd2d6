import pytest

from miopy import BadParam
from miopy.conv import networks


def test_layer_sets_build_valid_problems():
    assert len(networks.BODA) == 43 and len(networks.ALEXNET) == 5 and len(networks.RESNET50) == 23
    for name, layers in networks.LAYER_SETS.items():
        assert len({layer.name for layer in layers}) == len(layers), name
        for layer in layers:
            p = layer.problem(2)
            assert p.out_h > 0 and p.flops() > 0


def test_alexnet_layer2_matches_paper_shape():
    p = networks.ALEXNET[1].problem(128)
    assert (p.c, p.in_h, p.k, p.r, p.out_h) == (96, 27, 256, 5, 27)


def test_unknown_set():
    with pytest.raises(BadParam, match="network"):
        networks.layer_set("lenet")


def test_sets_hold_each_shape_once_except_boda():
    for name in ("alexnet", "vgg16", "resnet50", "googlenet"):
        shapes = [networks._shape(layer) for layer in networks.layer_set(name)]
        assert len(set(shapes)) == len(shapes), name


def test_problems_in_each_direction():
    ps = networks.problems("alexnet", 2, (1, 2))
    assert len(ps) == 10 and {p.direction for p in ps} == {1, 2}
