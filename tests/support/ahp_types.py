"""Every AHP type by name and a value's trip over the wire: what the wire's property tests and
the compiled encoder's share."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, settings

from orchestrator.ahp import actions as _ahp_actions
from orchestrator.ahp import state as _ahp_state
from orchestrator.ahp import (
    unstructure,
)
from tests.support.examples import examples

PROPERTY_SETTINGS = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def ahp_types() -> dict[str, Any]:
    """Every model class, union alias and enum the two modules export, by name."""
    return {
        name: getattr(module, name)
        for module in (_ahp_state, _ahp_actions)
        for name in module.__all__
        if not callable(getattr(module, name)) or isinstance(getattr(module, name), type)
    }


AHP_TYPES = ahp_types()


def over_the_wire(value: object) -> Any:
    """The value's wire form, through JSON text as a peer would receive it."""
    return json.loads(json.dumps(unstructure(value)))
