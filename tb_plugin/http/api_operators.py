"""Routes of the operator view: statistics by name, or by name and input shapes
(`/operators`), and one operator's call stacks (`/operators/stack`), from
analysis/operators.py. Documented in docs/http_api.md.
"""
from __future__ import annotations

from ..analysis import operators as operators_view
from ..loading import Loader
from . import params
from .requests import (_table_response, arrow_table_page, profile_from, profile_raw_result,
                       profile_result)
from .responses import json_response


def operators(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    group_by = params.choice(request.args, "group_by", ("name", "name_shape"), "name")
    default = "-" + operators_view.default_sort(prof).lstrip("-")
    raw = profile_raw_result(prof, key, operators_view.table, group_by=group_by)
    # a stored table's first pages
    page = arrow_table_page(params.table_params(request.args), raw, default)
    if page is not None:
        return json_response(page)
    df = profile_result(prof, key, operators_view.table, group_by=group_by)
    return _table_response(request.args, df, default, "name", f"operators_by_{group_by}.csv")


def operator_stack(request, loader: Loader):
    prof, _ = profile_from(loader, request.args)
    name = params.text(request.args, "name", required=True)
    shapes = params.text(request.args, "input_shapes")
    return json_response({"name": name, "input_shapes": shapes,
                          "stacks": operators_view.stacks(prof, name, shapes)})


ROUTES = {
    "/operators": operators,
    "/operators/stack": operator_stack,
}
