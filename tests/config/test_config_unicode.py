"""The config is a door too: a lone UTF-16 surrogate in the YAML (a double-quoted
`"\\ud800"`) or in the environment (undecodable bytes) is U+FFFD in the models (issue 31).

Before, it went as it was into the webchat's `hello` (every page's first frame), a group's
name, a bot's label: each a write that fails far from the file that caused it.
"""

from __future__ import annotations

from hypothesis import given, settings
from pydantic import BaseModel

from bridge.config import load_config
from bridge.config.document import parse_document
from bridge.config.loader import validate_at
from tests.support.any_text import ANY_TEXT, sendable

CONFIG = r'''
hub:
  listen: 127.0.0.1:0
  groups:
    - id: demo
      name: "De\ud800mo"
      driver: Echo
      bots: [Echo, Rules]
bcn:
  url: embedded
store: "memory://"
accounts:
  webchat:
    main:
      title: "${TITLE} \udfff"
bindings:
  - channel: "webchat:main"
    chat: lobby
    group: demo
'''


def test_lone_surrogates_in_the_yaml_and_the_environment_become_the_replacement_character(
    write_config,
) -> None:
    path = write_config(CONFIG)
    config = load_config(path, environ={"TITLE": "Chat \udcff room"})  # as os.environ has it
    assert config.hub is not None
    assert config.hub.groups[0].name == "De\ufffdmo"
    webchat = config.account("webchat:main")
    assert webchat.title == "Chat \ufffd room \ufffd"


class Section(BaseModel):
    title: str
    names: list[str]


@settings(max_examples=50)
@given(ANY_TEXT.filter(lambda text: "\x00" not in text))
def test_whatever_text_a_value_holds_the_model_holds_valid_unicode(text: str) -> None:
    doc = parse_document("section: {title: x, names: [x]}")
    doc.data["section"] = {"title": text, "names": [text, "plain"]}
    model, issues = validate_at(doc, ("section",), Section, environ={})
    assert issues == [] and model is not None
    assert sendable([model.title, model.names])
