"""Server-sent events split from bytes in pieces of any size: the data the OpenAI SDK's decoder would give."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.core.model.sse import EventData


def _fed(pieces: list[bytes]) -> list[bytes]:
    events = EventData()
    return [data for piece in pieces for data in events.feed(piece)]


def test_one_line_events_come_out_as_their_data_and_a_cut_off_event_waits() -> None:
    events = EventData()
    assert events.feed(b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: {"c"') == [b'{"a": 1}', b'{"b": 2}']
    assert events.feed(b": 3}") == []
    assert events.feed(b"\n") == []  # the line has ended, the event not yet
    assert events.feed(b"\n") == [b'{"c": 3}']


def test_comments_fields_and_several_data_lines() -> None:
    stream = (b": keep-alive\n\n"  # a comment alone is no event
              b"event: completion\nid: 7\nretry: 100\ndata: {\"a\": 1}\n\n"
              b"data: first\ndata:second\n: a comment inside\ndata\n\n"  # one space dropped; a bare "data" is ""
              b"event: ping\n\n"  # no data line: nothing
              b"\n\n\ndata: after blank lines\n\n")
    assert _fed([stream]) == [b'{"a": 1}', b"first\nsecond\n", b"after blank lines"]


def test_cr_and_crlf_end_lines_also_when_a_read_ends_between_cr_and_lf() -> None:
    assert _fed([b"data: one\r\n\r\ndata: two\r\rdata: three\n\n"]) == [b"one", b"two", b"three"]
    assert _fed([b"data: one\r", b"\n\r", b"\ndata: two\r\n\r\n"]) == [b"one", b"two"]
    # a CR that ends a piece ends the line at once: the event is out before the next read
    events = EventData()
    assert events.feed(b"data: one\r\r") == [b"one"]
    assert events.feed(b"\ndata: two\n\n") == [b"two"]  # that LF was the CR's: no extra blank line


def test_an_event_cut_off_by_the_end_of_the_stream_is_not_an_event() -> None:
    assert _fed([b"data: whole\n\n", b"data: cut off\n"]) == [b"whole"]


# Lines as a server may write them: data (JSON-ish, with colons and spaces), fields, comments, blank lines.
_text = st.text(st.sampled_from('ab {}":,é\\'), max_size=12)
_line = st.one_of(_text.map(lambda t: f"data: {t}"), _text.map(lambda t: f"data:{t}"), st.just("data"),
                  _text.map(lambda t: f": {t}"), _text.map(lambda t: f"event: {t}"), st.just("id: 4"),
                  st.just("retry: 10"), st.just(""))


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_line, max_size=14), ends=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1),
       cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_any_stream_cut_anywhere_gives_what_the_sdks_decoder_gives(lines: list[str], ends: list[str],
                                                                    cuts: list[int]) -> None:
    from openai._streaming import SSEDecoder

    stream = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines)).encode()
    points = sorted({min(cut, len(stream)) for cut in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    sdk = [event.data for event in SSEDecoder().iter_bytes(iter(pieces))]
    # the lean stream skips events whose data is blank, as it did with the SDK's events
    assert [data.decode() for data in _fed(pieces) if data.strip()] == [data for data in sdk if data.strip()]
