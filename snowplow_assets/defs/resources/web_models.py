"""The web models resource: which models are enabled and dbt-snowplow-web's variables."""

from dataclasses import asdict
from datetime import date

import dagster as dg

from snowplow_assets.settings import Settings
from snowplow_assets.web.variables import MODELS, WebVariables, parse_models


class WebModelsResource(dg.ConfigurableResource):
    """The enabled web models and dbt-snowplow-web's variables (the SNOWPLOW_WEB_* settings)."""

    models: str = ",".join(MODELS)
    start_date: str = WebVariables.start_date.isoformat()
    backfill_limit_days: int = WebVariables.backfill_limit_days
    lookback_window_hours: int = WebVariables.lookback_window_hours
    days_late_allowed: int = WebVariables.days_late_allowed
    max_session_days: int = WebVariables.max_session_days
    session_lookback_days: int = WebVariables.session_lookback_days
    upsert_lookback_days: int = WebVariables.upsert_lookback_days
    heartbeat: int = WebVariables.heartbeat
    min_visit_length: int = WebVariables.min_visit_length

    @classmethod
    def from_settings(cls, settings: Settings) -> "WebModelsResource":
        variables = WebVariables.from_settings(settings)
        return cls(models=",".join(parse_models(settings.web_models)), **_config_of(variables))

    def enabled_models(self) -> tuple[str, ...]:
        return parse_models(self.models)

    def variables(self) -> WebVariables:
        config = self.model_dump(exclude={"models", "start_date"})
        return WebVariables(start_date=date.fromisoformat(self.start_date), **config)


def _config_of(variables: WebVariables) -> dict[str, object]:
    """WebVariables as the resource's config: Dagster config has no date type, so the start date is ISO text."""
    return {**asdict(variables), "start_date": variables.start_date.isoformat()}
