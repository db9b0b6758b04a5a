"""An InfluxQL query for grafana-foundation-sdk panels (the SDK has no InfluxDB query builder).

Grafana's InfluxDB data source takes a raw InfluxQL text when `rawQuery` is true; `alias` names the
series (`$tag_<name>` is replaced by the series' tag value) and `resultFormat` is `time_series` or
`table`. Source: Grafana's InfluxDB data source, `InfluxQuery` in
public/app/plugins/datasource/influxdb/types.ts (the fields below are the ones a raw query uses).
"""

from __future__ import annotations

import typing

from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.models import dashboard

RESULT_FORMATS = ("time_series", "table")


class InfluxQLQuery(cogvariants.Dataquery):
    """One raw InfluxQL target of a panel; `to_json` gives the dict Grafana stores in `targets`."""

    def __init__(self, query: str = "", ref_id: str = "", alias: str | None = None,
                 result_format: str = "time_series", datasource: dashboard.DataSourceRef | None = None) -> None:
        self.query = query
        self.ref_id = ref_id
        self.alias = alias
        self.result_format = result_format
        self.datasource = datasource

    def to_json(self) -> dict[str, object]:
        payload: dict[str, object] = {"query": self.query, "rawQuery": True, "refId": self.ref_id,
                                      "resultFormat": self.result_format}
        if self.alias is not None:
            payload["alias"] = self.alias
        if self.datasource is not None:
            payload["datasource"] = self.datasource.to_json()
        return payload


class InfluxQL(cogbuilder.Builder[InfluxQLQuery]):
    """Builder of an `InfluxQLQuery`, in the SDK's style: `InfluxQL(text).ref_id("A").alias(...)`."""

    def __init__(self, query: str) -> None:
        if not query.lstrip().upper().startswith(("SELECT ", "SHOW ")):
            raise ValueError(f"not an InfluxQL SELECT or SHOW statement: {query!r}")
        self._internal = InfluxQLQuery(query=query)

    def build(self) -> InfluxQLQuery:
        if not self._internal.ref_id:
            raise ValueError(f"an InfluxQL target needs a refId: {self._internal.query!r}")
        return self._internal

    def ref_id(self, ref_id: str) -> typing.Self:
        self._internal.ref_id = ref_id
        return self

    def alias(self, alias: str) -> typing.Self:
        """The series name; `$tag_<tag>` is replaced by the series' value of that tag."""
        self._internal.alias = alias
        return self

    def result_format(self, result_format: str) -> typing.Self:
        """Raises: ValueError unless `time_series` or `table`."""
        if result_format not in RESULT_FORMATS:
            raise ValueError(f"resultFormat must be one of {RESULT_FORMATS}, got {result_format!r}")
        self._internal.result_format = result_format
        return self

    def datasource(self, datasource: dashboard.DataSourceRef) -> typing.Self:
        self._internal.datasource = datasource
        return self


class InfluxQLAnnotationQuery(dashboard.AnnotationQuery):
    """A dashboard annotation read with InfluxQL. Grafana's InfluxDB data source takes the query
    from the annotation itself (`query`, "InfluxQL puts a query string on the annotation") and maps
    the result's columns to an event with `titleColumn`, `textColumn`, `tagsColumn` (comma-separated)
    and `timeEndColumn` (a region's end, epoch ms); the `time` column is the event's start. Source:
    Grafana's public/app/plugins/datasource/influxdb/datasource.ts (`annotationEvents`) and
    response_parser.ts (`transformAnnotationResponse`)."""

    def __init__(self) -> None:
        super().__init__()
        self.query = ""
        self.title_column: str | None = None
        self.text_column: str | None = None
        self.tags_column: str | None = None
        self.time_end_column: str | None = None

    def to_json(self) -> dict[str, object]:
        payload = super().to_json()
        payload["query"] = self.query
        for key, value in (("titleColumn", self.title_column), ("textColumn", self.text_column),
                           ("tagsColumn", self.tags_column), ("timeEndColumn", self.time_end_column)):
            if value is not None:
                payload[key] = value
        return payload


class InfluxQLAnnotation(cogbuilder.Builder[InfluxQLAnnotationQuery]):
    """Builder of an `InfluxQLAnnotationQuery`: `InfluxQLAnnotation(name, query).datasource(ref)
    .columns(text="description", tags="protocol,routing", time_end="resumed_wall_ms")`."""

    def __init__(self, name: str, query: str) -> None:
        if not query.lstrip().upper().startswith("SELECT "):
            raise ValueError(f"not an InfluxQL SELECT statement: {query!r}")
        self._internal = InfluxQLAnnotationQuery()
        self._internal.name = name
        self._internal.query = query
        self._internal.enable = True

    def build(self) -> InfluxQLAnnotationQuery:
        return self._internal

    def datasource(self, datasource: dashboard.DataSourceRef) -> typing.Self:
        self._internal.datasource = datasource
        return self

    def icon_color(self, color: str) -> typing.Self:
        self._internal.icon_color = color
        return self

    def columns(self, *, title: str | None = None, text: str | None = None, tags: str | None = None,
                time_end: str | None = None) -> typing.Self:
        """Which result columns give the event's title, text, tags (comma-separated names) and end."""
        self._internal.title_column = title
        self._internal.text_column = text
        self._internal.tags_column = tags
        self._internal.time_end_column = time_end
        return self
