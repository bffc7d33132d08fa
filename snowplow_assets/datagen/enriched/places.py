"""Reference data: where the visitors are, and what the IP lookups make of their addresses."""

from __future__ import annotations

from dataclasses import dataclass

from snowplow_assets.datagen.enriched.weighted_choice import WeightedChoice


@dataclass(frozen=True)
class _Place:
    weight: float
    country: str
    region: str
    city: str
    zipcode: str
    latitude: str
    longitude: str
    region_name: str
    timezone: str
    language: str
    isp: str
    isp_domain: str
    ip_prefix: str  # the first two octets of the visitors' addresses


PLACES = WeightedChoice((place, place.weight) for place in (
    _Place(14, "NL", "NH", "Amsterdam", "1012", "52.3731", "4.8922", "North Holland", "Europe/Amsterdam", "nl-NL", "KPN B.V.", "kpn.net", "145.53"),
    _Place(6, "NL", "ZH", "Rotterdam", "3011", "51.9225", "4.4792", "South Holland", "Europe/Amsterdam", "nl-NL", "Ziggo B.V.", "ziggo.nl", "84.26"),
    _Place(12, "DE", "BE", "Berlin", "10115", "52.5200", "13.4050", "Land Berlin", "Europe/Berlin", "de-DE", "Deutsche Telekom AG", "telekom.de", "91.64"),
    _Place(8, "DE", "BY", "Munich", "80331", "48.1374", "11.5755", "Bavaria", "Europe/Berlin", "de-DE", "Vodafone GmbH", "vodafone.de", "88.217"),
    _Place(14, "GB", "ENG", "London", "EC1A", "51.5072", "-0.1276", "England", "Europe/London", "en-GB", "British Telecommunications PLC", "bt.com", "81.129"),
    _Place(6, "FR", "IDF", "Paris", "75001", "48.8566", "2.3522", "Île-de-France", "Europe/Paris", "fr-FR", "Orange S.A.", "orange.fr", "90.84"),
    _Place(4, "CH", "ZH", "Zürich", "8001", "47.3769", "8.5417", "Zurich", "Europe/Zurich", "de-CH", "Swisscom (Schweiz) AG", "swisscom.ch", "178.197"),
    _Place(4, "ES", "MD", "Madrid", "28013", "40.4168", "-3.7038", "Madrid", "Europe/Madrid", "es-ES", "Telefonica de Espana", "telefonica.es", "83.44"),
    _Place(12, "US", "NY", "New York", "10001", "40.7128", "-74.0060", "New York", "America/New_York", "en-US", "Verizon Fios", "verizon.net", "72.229"),
    _Place(8, "US", "CA", "San Francisco", "94103", "37.7749", "-122.4194", "California", "America/Los_Angeles", "en-US", "Comcast Cable", "comcast.net", "73.15"),
    _Place(5, "US", "IL", "Chicago", "60601", "41.8781", "-87.6298", "Illinois", "America/Chicago", "en-US", "AT&T Services", "att.net", "99.12"),
    _Place(3, "BR", "SP", "São Paulo", "01310", "-23.5505", "-46.6333", "São Paulo", "America/Sao_Paulo", "pt-BR", "Telefonica Brasil", "vivo.com.br", "177.68"),
    _Place(2, "JP", "13", "Tokyo", "100-0001", "35.6762", "139.6503", "Tokyo", "Asia/Tokyo", "ja-JP", "NTT Communications", "ocn.ne.jp", "153.156"),
    _Place(2, "AU", "NSW", "Sydney", "2000", "-33.8688", "151.2093", "New South Wales", "Australia/Sydney", "en-AU", "Telstra", "telstra.net", "101.160"),
))  # fmt: skip
