"""Reference data: the visitors' devices and browsers, and what the user-agent enrichments make of them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from snowplow_assets.datagen.enriched.lines import contexts_json
from snowplow_assets.datagen.enriched.schemas import UA_PARSER_SCHEMA, YAUAA_SCHEMA
from snowplow_assets.datagen.enriched.weighted_choice import WeightedChoice


@dataclass(frozen=True)
class _Device:
    weight: float
    useragent: str
    browser: str
    browser_version: str
    render_engine: str  # as user-agent-utils names it
    layout_engine: str  # as YAUAA names it
    layout_engine_version: str
    os_name: str
    os_family: str
    os_version: str
    os_manufacturer: str
    device_type: str  # Computer, Mobile or Tablet
    device_family: str  # as ua-parser names it
    device_brand: str
    device_name: str
    screens: tuple[tuple[int, int], ...]
    color_depth: str = "24"

    @property
    def is_mobile(self) -> bool:
        return self.device_type != "Computer"

    @cached_property
    def derived_contexts(self) -> tuple[str, str]:
        """derived_contexts without and with the YAUAA enrichment."""
        ua_parser = (UA_PARSER_SCHEMA, self._ua_parser_data())
        yauaa = (YAUAA_SCHEMA, self._yauaa_data())
        return contexts_json([ua_parser]), contexts_json([ua_parser, yauaa])

    def _ua_parser_data(self) -> dict:
        major, minor, patch = (self.browser_version.split(".") + ["", "", ""])[:3]
        os_parts = (self.os_version.split(".") + ["", "", ""])[:3]
        return {
            "useragentFamily": self.browser,
            "useragentMajor": major,
            "useragentMinor": minor or None,
            "useragentPatch": patch or None,
            "useragentVersion": f"{self.browser} {self.browser_version}",
            "osFamily": self.os_family,
            "osMajor": os_parts[0],
            "osMinor": os_parts[1] or None,
            "osPatch": os_parts[2] or None,
            "osPatchMinor": None,
            "osVersion": f"{self.os_family} {self.os_version}",
            "deviceFamily": self.device_family,
        }

    def _yauaa_data(self) -> dict:
        device_class = {"Computer": "Desktop", "Mobile": "Phone", "Tablet": "Tablet"}[self.device_type]
        major = self.browser_version.split(".")[0]
        return {
            "deviceClass": device_class,
            "deviceName": self.device_name,
            "deviceBrand": self.device_brand,
            "operatingSystemClass": "Mobile" if self.is_mobile else "Desktop",
            "operatingSystemName": self.os_family,
            "operatingSystemVersion": self.os_version,
            "layoutEngineClass": "Browser",
            "layoutEngineName": self.layout_engine,
            "layoutEngineVersion": self.layout_engine_version,
            "agentClass": "Browser",
            "agentName": self.browser,
            "agentVersion": self.browser_version,
            "agentVersionMajor": major,
        }


_DESKTOP_SCREENS = ((1920, 1080), (1366, 768), (1536, 864), (2560, 1440), (1440, 900))
_MAC_SCREENS = ((1440, 900), (1512, 982), (1728, 1117), (2560, 1440))
_IPHONE_SCREENS = ((390, 844), (393, 852), (430, 932), (375, 667))
_ANDROID_SCREENS = ((412, 915), (360, 800), (384, 854), (393, 873))
DEVICES = WeightedChoice((device, device.weight) for device in (
    _Device(
        28, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36",
        "Chrome", "122.0.0.0", "WEBKIT", "Blink", "122.0", "Windows 10", "Windows", "10", "Microsoft Corporation",
        "Computer", "Other", "Unknown", "Desktop", _DESKTOP_SCREENS,
    ),
    _Device(
        8, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36 Edg/122.0.2365.80",
        "Edge", "122.0.2365.80", "WEBKIT", "Blink", "122.0", "Windows 10", "Windows", "10", "Microsoft Corporation",
        "Computer", "Other", "Unknown", "Desktop", _DESKTOP_SCREENS,
    ),
    _Device(
        6, "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:123.0) Gecko/20100101 Firefox/123.0",
        "Firefox", "123.0", "GECKO", "Gecko", "123.0", "Windows 10", "Windows", "10", "Microsoft Corporation",
        "Computer", "Other", "Unknown", "Desktop", _DESKTOP_SCREENS,
    ),
    _Device(
        10, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3.1 Safari/605.1.15",
        "Safari", "17.3.1", "WEBKIT", "AppleWebKit", "605.1.15", "Mac OS X", "Mac OS X", "10.15.7", "Apple Inc.",
        "Computer", "Mac", "Apple", "Apple Macintosh", _MAC_SCREENS, "30",
    ),
    _Device(
        7, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36",
        "Chrome", "122.0.0.0", "WEBKIT", "Blink", "122.0", "Mac OS X", "Mac OS X", "10.15.7", "Apple Inc.",
        "Computer", "Mac", "Apple", "Apple Macintosh", _MAC_SCREENS, "30",
    ),
    _Device(
        22, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3.1 Mobile/15E148 Safari/604.1",
        "Mobile Safari", "17.3.1", "WEBKIT", "AppleWebKit", "605.1.15", "iOS", "iOS", "17.3.1", "Apple Inc.",
        "Mobile", "iPhone", "Apple", "Apple iPhone", _IPHONE_SCREENS,
    ),
    _Device(
        14, "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Mobile Safari/537.36",
        "Chrome Mobile", "122.0.0.0", "WEBKIT", "Blink", "122.0", "Android", "Android", "10", "Google Inc.",
        "Mobile", "K", "Unknown", "Android Mobile", _ANDROID_SCREENS,
    ),
    _Device(
        5, "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
        "Samsung Internet", "24.0", "WEBKIT", "Blink", "117.0", "Android", "Android", "14", "Google Inc.",
        "Mobile", "Samsung SM-S918B", "Samsung", "Samsung SM-S918B", ((384, 832), (412, 915)),
    ),
    _Device(
        4, "Mozilla/5.0 (iPad; CPU OS 17_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Mobile/15E148 Safari/604.1",
        "Mobile Safari", "17.3", "WEBKIT", "AppleWebKit", "605.1.15", "iOS", "iOS", "17.3", "Apple Inc.",
        "Tablet", "iPad", "Apple", "Apple iPad", ((820, 1180), (768, 1024), (834, 1194)),
    ),
))  # fmt: skip
BROWSER_FEATURES = (
    "br_features_flash", "br_features_java", "br_features_director", "br_features_quicktime",
    "br_features_realplayer", "br_features_windowsmedia", "br_features_gears", "br_features_silverlight",
)  # fmt: skip
