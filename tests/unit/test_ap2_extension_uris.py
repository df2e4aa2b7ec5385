"""The AP2 A2A-extension URIs: v0.1's and v0.2's, side by side."""

from __future__ import annotations

from mudrika.payments.a2a import AP2_EXTENSION_URI, AP2_EXTENSION_URIS, AP2_V02_EXTENSION_URI


def test_both_ap2_extension_uris_are_known() -> None:
    assert AP2_EXTENSION_URI == "https://github.com/google-agentic-commerce/ap2/tree/v0.1"
    assert AP2_V02_EXTENSION_URI == "https://github.com/google-agentic-commerce/ap2/v1"
    assert {AP2_EXTENSION_URI, AP2_V02_EXTENSION_URI} == AP2_EXTENSION_URIS
