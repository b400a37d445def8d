"""List pages of tables that grow without bound: capped counts, text-box filters."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

COUNT_CAP = 10_000  # list pages count at most this many rows (then say "more than")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _summary(model: Any, lines: list[str], counts: dict[str, int]) -> tuple[Any, ...]:
    """get_deleted_objects' answer without the ORM walking every message row."""
    return lines, {str(model._meta.verbose_name_plural): len(lines), **counts}, set(), []


# ------------------------------------------------------------------ list pages
class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows: an unfiltered list of a huge table costs one
    bounded query, not a COUNT(*) over the table. `capped` says the count stopped."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet):  # only the keys: annotations cost nothing here
            rows = rows.values("pk")
        return int(rows[:COUNT_CAP + 1].count())

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP


class InputFilter(admin.SimpleListFilter):
    """A text box instead of a list of values, so the sidebar never enumerates a large
    table (RelatedFieldListFilter reads every row of the related model, AllValues runs
    SELECT DISTINCT over this one). The parameter is an exact lookup, e.g. session__id__exact."""

    template = "admin/arbor_input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return []

    def has_output(self) -> bool:
        return True

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.parameter_name: value}) if value else queryset

    def choices(self, changelist: Any) -> Any:
        yield {
            "name": self.parameter_name, "value": self.value() or "",
            "keep": [(k, v) for k, v in changelist.params.items() if k != self.parameter_name],
            "clear": changelist.get_query_string(remove=[self.parameter_name]),
        }


def input_filter(lookup: str, title: str) -> type[InputFilter]:
    name = lookup.replace("__", "_").title().replace("_", "") + "Filter"
    return type(name, (InputFilter,), {"parameter_name": lookup, "title": title})


class LargeTableAdmin(admin.ModelAdmin):
    """List pages of tables that grow without bound: no second COUNT(*) of the whole
    table, no facet counts, a capped count for the paginator."""

    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = CappedPaginator




class ReadOnlyAdmin(LargeTableAdmin):
    """View and delete only; viewing follows the default view permission."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
