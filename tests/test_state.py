"""No module-level mutable state: every visitor of a Space would share it. Per-user state is gr.State."""
import importlib
import logging
import pkgutil
import types

import gradio as gr
import numpy as np
import pytest
import torch

import components
import models
import viz

MUTABLE = (list, dict, set, bytearray, torch.Tensor, torch.nn.Module, np.ndarray)


def all_modules():
    names = ["app"]
    for package in (models, viz, components):
        names += [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    return names


@pytest.mark.parametrize("name", all_modules())
def test_no_module_level_mutable_state(name):
    module = importlib.import_module(name)
    offenders = []
    for attr, value in vars(module).items():
        if attr.startswith("__") or isinstance(value, (types.ModuleType, type, logging.Logger)):
            continue
        if isinstance(value, (gr.Blocks, gr.I18n, gr.themes.Base)):
            continue                                   # the app itself: built once, the same for all
        constant = attr.isupper()                      # translation tables, presets, limits
        if isinstance(value, MUTABLE) and not (constant and isinstance(value, (dict, list))):
            offenders.append(attr)
        if constant and isinstance(value, (torch.Tensor, torch.nn.Module, np.ndarray, set, bytearray)):
            offenders.append(attr)
    assert not offenders, f"{name} keeps mutable state at module level: {offenders}"
