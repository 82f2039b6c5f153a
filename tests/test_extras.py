"""A missing extra is one `error:` line naming the pip command (exit 1), never a traceback."""
from __future__ import annotations

import pytest

from wardrik_cli.errors import MissingExtra
from wardrik_cli.extras import need


def test_an_installed_extra_is_returned():
    assert need("orjson", "core").dumps({}) == b"{}"


@pytest.mark.parametrize("extra", ["s3", "sql", "otlp"])
def test_a_missing_extra_names_the_pip_command(extra):
    with pytest.raises(MissingExtra) as e:
        need("wardrik_no_such_module_for_test", extra)
    assert f"pip install 'wardrik[{extra}]'" in str(e.value)
    assert e.value.exit_code == 1
