from b3os_infer.stops import StopMatcher


def run(stops, pieces):
    matcher = StopMatcher(stops)
    out = []
    for piece in pieces:
        text, matched = matcher.feed(piece)
        out.append(text)
        if matched:
            return "".join(out), matched
    return "".join(out) + matcher.flush(), None


def test_no_stops_passes_text_through():
    assert run([], ["a", "b"]) == ("ab", None)


def test_stop_inside_one_piece_cuts_the_text_before_it():
    assert run(["END"], ["hello END world"]) == ("hello ", "END")


def test_stop_spanning_pieces_is_found_and_never_leaks():
    matcher = StopMatcher(["STOP"])
    assert matcher.feed("abc ST") == ("abc ", None)
    assert matcher.feed("O") == ("", None)
    assert matcher.feed("Pxyz") == ("", "STOP")


def test_false_start_is_released():
    assert run(["STOP"], ["ST", "ART"]) == ("START", None)


def test_held_text_is_flushed_at_the_end():
    assert run(["STOP"], ["the ST"]) == ("the ST", None)


def test_earliest_of_several_stops_wins():
    assert run(["world", "lo"], ["hello world"]) == ("hel", "lo")


def test_whole_and_chunked_agree():
    text = "one two three four"
    for size in range(1, len(text) + 1):
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        assert run(["three"], pieces) == ("one two ", "three")
