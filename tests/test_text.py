"""The one policy for text UTF-8 cannot encode (lone surrogates), shared by the eval files and the judge."""

from __future__ import annotations

from affectgym.text import REPLACEMENT_CHARACTER, count_lone_surrogates, replace_lone_surrogates


def test_each_lone_surrogate_becomes_one_replacement_character_and_whole_characters_are_kept() -> None:
    text = "half \ud83d, two halves \ud83d\ude00, whole \U0001f600, low \udfff"
    replaced = replace_lone_surrogates(text)
    assert replaced == "half \ufffd, two halves \ufffd\ufffd, whole \U0001f600, low \ufffd"
    assert REPLACEMENT_CHARACTER == "\ufffd" and "?" not in replaced
    assert count_lone_surrogates(text) == 4 and count_lone_surrogates(replaced) == 0
    assert replaced.encode("utf-8").decode("utf-8") == replaced


def test_text_without_lone_surrogates_is_unchanged() -> None:
    text = "Ça va? 😀 \ufffd"
    assert replace_lone_surrogates(text) == text and count_lone_surrogates(text) == 0
