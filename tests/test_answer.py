"""The answer stage against a loopback chat-completions stand-in (real openai client, real HTTP)."""
from __future__ import annotations

import dataclasses
import socket

import pytest

from pipeline.answering.answer import (
    EXTRACTIVE_NOTE,
    NOT_FOUND,
    SYSTEM_PROMPT,
    AnswerError,
    ChatConfig,
    Fragment,
    build_messages,
    extractive_answer,
    foreign_citations,
    generate,
    parse_citations,
    refusal,
    rewrite_query,
    split_units,
)

try:
    from chat_stand_in import ChatStandIn
except ImportError:  # tests/ imported as a package
    from tests.chat_stand_in import ChatStandIn

KEY = "sk-test-0123456789abcdef-secret"
KP = "DU/2025/277"
KP_TITLE = "Kodeks pracy"

# Kodeks pracy (Dz. U. 2025 poz. 277), art. 153-154, as printed in the consolidated text.
ART_153 = (
    "Art. 153. § 1. Pracownik podejmujący pracę po raz pierwszy, w roku kalendarzowym, w którym podjął pracę, "
    "uzyskuje prawo do urlopu z upływem każdego miesiąca pracy, w wymiarze 1/12 wymiaru urlopu przysługującego "
    "mu po przepracowaniu roku.\n"
    "§ 2. Prawo do kolejnych urlopów pracownik nabywa w każdym następnym roku kalendarzowym."
)
ART_154 = (
    "Art. 154. § 1. Wymiar urlopu wynosi:\n"
    "1) 20 dni – jeżeli pracownik jest zatrudniony krócej niż 10 lat;\n"
    "2) 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat.\n"
    "§ 2. Wymiar urlopu dla pracownika zatrudnionego w niepełnym wymiarze czasu pracy ustala się proporcjonalnie "
    "do wymiaru czasu pracy tego pracownika, biorąc za podstawę wymiar urlopu określony w § 1; niepełny dzień "
    "urlopu zaokrągla się w górę do pełnego dnia.\n"
    "§ 3. Wymiar urlopu w danym roku kalendarzowym, ustalony na podstawie § 1 i 2, nie może przekroczyć wymiaru "
    "określonego w § 1."
)
ART_154_1 = (
    "Art. 154^1. § 1. Do okresu zatrudnienia, od którego zależy prawo do urlopu i wymiar urlopu, wlicza się "
    "okresy poprzedniego zatrudnienia, bez względu na przerwy w zatrudnieniu oraz sposób ustania stosunku pracy."
)
FRAGMENTS = [
    Fragment(KP, "154", ART_154, KP_TITLE, score=0.9, similarity=0.82),
    Fragment(KP, "154^1", ART_154_1, KP_TITLE, score=0.7, similarity=0.74),
    Fragment(KP, "153", ART_153, KP_TITLE, score=0.5, similarity=0.70),
]
QUESTION = "Pracuję 12 lat, ile dni urlopu?"
REPLY = (
    "Przysługuje Ci 26 dni urlopu, bo jesteś zatrudniony co najmniej 10 lat [DU/2025/277, art. 154]. "
    "Do stażu wlicza się okresy poprzedniego zatrudnienia [DU/2025/277, art. 154¹]."
)


def config_for(server: ChatStandIn, **changes) -> ChatConfig:
    config = ChatConfig.from_env({"ANSWER_BASE_URL": server.base_url, "ANSWER_API_KEY": KEY, "ANSWER_MODEL": "m-1"})
    return dataclasses.replace(config, max_retries=0, **changes)


def test_request_carries_the_rules_and_every_fragment():
    with ChatStandIn(REPLY) as server:
        generate(QUESTION, FRAGMENTS, config_for(server))
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["model"] == "m-1"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "usage" not in body  # the OpenRouter-only field is not sent to other servers
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert "[DU/2025/277, art. 154]" in SYSTEM_PROMPT and NOT_FOUND in SYSTEM_PROMPT
    assert "wyłącznie" in SYSTEM_PROMPT and "po polsku" in SYSTEM_PROMPT
    assert user["role"] == "user"
    for i, fragment in enumerate(FRAGMENTS, 1):
        assert f"Fragment {i}: [{KP}, art. {fragment.article}] {KP_TITLE}\n{fragment.text}" in user["content"]
    assert user["content"].endswith(f"Pytanie: {QUESTION}")


def test_build_messages_marks_later_parts():
    part = Fragment(KP, "151^1", "§ 3. Dalsza część artykułu.", None, part=2)
    user = build_messages("q", [part])[1]["content"]
    assert "Fragment 1: [DU/2025/277, art. 151^1] (część 2)\n§ 3. Dalsza część artykułu." in user


def test_a_stream_closed_before_its_last_chunk_is_not_an_answer():
    """Cut after a citation, what arrived would read as a whole, cited answer: the stream's missing
    finish_reason is what tells."""
    with ChatStandIn(REPLY, chunk_chars=5, close_after=3) as server:
        with pytest.raises(AnswerError) as cut:
            generate(QUESTION, FRAGMENTS, config_for(server))
    assert str(cut.value) == "the answer was cut off after 15 characters: the stream ended without a finish_reason"


def test_the_callers_own_error_in_on_token_comes_out_as_it_is():
    class ClientGone(Exception):
        pass

    def on_token(piece: str) -> None:
        raise ClientGone("the client disconnected")

    with ChatStandIn(REPLY, chunk_chars=5) as server:
        with pytest.raises(ClientGone, match="the client disconnected"):
            generate(QUESTION, FRAGMENTS, config_for(server), on_token=on_token)


def test_streamed_answer_is_assembled_with_citations_tokens_and_cost():
    tokens: list[str] = []
    with ChatStandIn(REPLY, chunk_chars=5) as server:
        config = config_for(server, price_in=0.15, price_out=0.60)
        answer = generate(QUESTION, FRAGMENTS, config, on_token=tokens.append)
    assert len(tokens) == -(-len(REPLY) // 5)  # arrived in pieces, not at once
    assert "".join(tokens) == REPLY == answer.text
    assert answer.citations == [(KP, "154"), (KP, "154^1")]
    assert foreign_citations(answer) == []
    assert answer.refused is False
    assert answer.model == "m-1"
    usage = server.usage
    assert (answer.prompt_tokens, answer.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert answer.prompt_tokens > 100  # the fragments were counted
    expected = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
    assert answer.cost_usd == pytest.approx(expected)


def test_cost_reported_by_the_server_wins_over_prices():
    with ChatStandIn(REPLY, cost=0.000421, model="openai/gpt-4o-mini-2024-07-18") as server:
        answer = generate(QUESTION, FRAGMENTS, config_for(server, price_in=100.0, price_out=100.0))
    assert answer.cost_usd == pytest.approx(0.000421)
    assert answer.model == "openai/gpt-4o-mini-2024-07-18"  # the model that actually answered


def test_no_prices_and_no_reported_cost_means_unknown_cost():
    with ChatStandIn(REPLY) as server:
        answer = generate(QUESTION, FRAGMENTS, config_for(server))
    assert answer.cost_usd is None and answer.completion_tokens == len(REPLY.split())


def test_non_streaming_answer():
    with ChatStandIn(REPLY, cost=0.001) as server:
        answer = generate(QUESTION, FRAGMENTS, config_for(server), stream=False)
    assert not server.requests[0].body.get("stream")
    assert "stream_options" not in server.requests[0].body
    assert answer.text == REPLY and answer.cost_usd == pytest.approx(0.001)
    assert answer.citations == [(KP, "154"), (KP, "154^1")]


def test_made_up_citation_is_flagged():
    with ChatStandIn("Tak [DU/2025/277, art. 999].") as server:
        answer = generate(QUESTION, FRAGMENTS, config_for(server))
    assert foreign_citations(answer) == [(KP, "999")]


@pytest.mark.parametrize("text", [NOT_FOUND, NOT_FOUND.rstrip("."), f"  {NOT_FOUND}\n"])
def test_fallback_sentence_is_a_refusal(text):
    with ChatStandIn(text) as server:
        answer = generate("Ile kosztuje bilet do kina?", FRAGMENTS, config_for(server))
    assert answer.refused is True and answer.citations == []


def test_bad_key_names_the_variable_and_hides_the_key():
    with ChatStandIn(REPLY, api_key="the-right-key") as server:
        with pytest.raises(AnswerError) as err:
            generate(QUESTION, FRAGMENTS, config_for(server))
        # The same server behind OpenRouter's variable name.
        or_config = dataclasses.replace(config_for(server), key_var="OPENROUTER_API_KEY")
        with pytest.raises(AnswerError) as or_err:
            generate(QUESTION, FRAGMENTS, or_config)
    message = str(err.value)
    assert "401" in message and "ANSWER_API_KEY" in message
    assert "OPENROUTER_API_KEY" in str(or_err.value)
    for m in (message, str(or_err.value)):
        assert KEY not in m and "0123456789abcdef" not in m and "\n" not in m


@pytest.mark.parametrize(
    "status, words",
    [
        (500, ["500", "retry later"]),
        (503, ["503"]),
        (404, ["404", "ANSWER_MODEL", "m-1"]),
        (429, ["429", "rate-limited"]),
        (402, ["402", "credits"]),
        (400, ["400", "bad things happened"]),
    ],
)
def test_server_errors_become_one_line_answer_errors(status, words):
    with ChatStandIn(REPLY, fail=(status, f"bad things happened (key {KEY})")) as server:
        with pytest.raises(AnswerError) as err:
            generate(QUESTION, FRAGMENTS, config_for(server))
    message = str(err.value)
    for word in words:
        assert word in message
    assert KEY not in message and "\n" not in message


def test_connection_refused_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nobody listens there
    config = ChatConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0)
    with pytest.raises(AnswerError, match=r"cannot connect to http://127\.0\.0\.1:\d+/v1: check ANSWER_BASE_URL"):
        generate(QUESTION, FRAGMENTS, config)


def test_slow_server_times_out_clearly():
    with ChatStandIn(REPLY, delay=3.0) as server:
        with pytest.raises(AnswerError, match="within 0.5 s.*ANSWER_TIMEOUT"):
            generate(QUESTION, FRAGMENTS, config_for(server, timeout=0.5))


def test_empty_answer_is_an_error():
    with ChatStandIn("") as server:
        with pytest.raises(AnswerError, match="empty answer"):
            generate(QUESTION, FRAGMENTS, config_for(server))


def test_rewrite_query_returns_one_line():
    reply = '"wymiar urlopu wypoczynkowego a staż pracy 12 lat"\nTo jest przeformułowanie.'
    with ChatStandIn(reply) as server:
        rewritten = rewrite_query("ile mam wolnego jak robię 12 lat", config_for(server))
    assert rewritten == "wymiar urlopu wypoczynkowego a staż pracy 12 lat"
    body = server.requests[0].body
    assert body["messages"][-1] == {"role": "user", "content": "ile mam wolnego jak robię 12 lat"}
    assert "ustaw" in body["messages"][0]["content"] and not body.get("stream")


def test_config_from_env_and_masking():
    assert ChatConfig.from_env({}).configured is False
    openrouter = ChatConfig.from_env({"OPENROUTER_API_KEY": KEY, "ANSWER_PRICE_IN": "0.15", "ANSWER_PRICE_OUT": "0.6"})
    assert openrouter.configured and openrouter.is_openrouter
    assert openrouter.base_url == "https://openrouter.ai/api/v1" and openrouter.model == "openai/gpt-4o-mini"
    assert (openrouter.price_in, openrouter.price_out) == (0.15, 0.6)
    assert openrouter.key_var == "OPENROUTER_API_KEY" and openrouter.api_key == KEY
    for text in (openrouter.describe(), repr(openrouter), str(openrouter)):
        assert KEY not in text
    assert "OPENROUTER_API_KEY=***" in openrouter.describe()
    # A local server needs no key, and never gets the OpenRouter one.
    local = ChatConfig.from_env({"ANSWER_BASE_URL": "http://localhost:11434/v1/", "OPENROUTER_API_KEY": KEY})
    assert local.configured and local.api_key is None and local.base_url == "http://localhost:11434/v1"
    with pytest.raises(AnswerError, match="ANSWER_PRICE_IN"):
        ChatConfig.from_env({"ANSWER_PRICE_IN": "cheap"})


def test_unconfigured_generate_says_what_to_set():
    with pytest.raises(AnswerError, match="set OPENROUTER_API_KEY"):
        generate(QUESTION, FRAGMENTS, ChatConfig.from_env({}))


def test_local_server_without_key_works():
    with ChatStandIn(REPLY) as server:
        config = dataclasses.replace(ChatConfig.from_env({"ANSWER_BASE_URL": server.base_url}), max_retries=0)
        answer = generate(QUESTION, FRAGMENTS, config)
    assert answer.text == REPLY


def test_parse_citations_canonicalises_articles():
    text = "Zob. [DU/2025/277, art. 151¹; DU/2025/277, art. 22^1c], [MP/2020/3, art. 5a] i [DU/2025/277, art. 151^1]."
    assert parse_citations(text) == [(KP, "151^1"), (KP, "22^1c"), ("MP/2020/3", "5a")]


@pytest.mark.parametrize("text, expected", [
    ("[DU/2025/277, art. 154, 155]", ["154", "155"]),
    ("[DU/2025/277, art. 154 i 155]", ["154", "155"]),
    ("[DU/2025/277, art. 154 i art. 155 § 1]", ["154", "155"]),
    ("[DU/2025/277, art. 154-155]", ["154", "155"]),  # a range: both ends
    ("[DU/2025/277, art. 22¹, 22² oraz 29]", ["22^1", "22^2", "29"]),
    ("[DU/2025/277 art. 154]", ["154"]),  # no comma
    ("[DU/2025/277, Art. 154]", ["154"]),
    ("[Dz.U. 2025 poz. 277, art. 154]", ["154"]),  # the journal form of the act id
    ("[Dz. U. z 2025 r. poz. 277, art. 151¹ § 2]", ["151^1"]),
    ("[DU/2025/277, art. 154 § 1 pkt 2]", ["154"]),  # § and pkt are not articles
    ("DU/2025/277, art. 154 - 26 dni urlopu", ["154"]),  # a number that is not followed like an article
    ("[DU/2025/277, art. 154, § 2]", ["154"]),
])
def test_parse_citations_reads_the_forms_models_write(text, expected):
    assert parse_citations(text) == [(KP, a) for a in expected]


def test_split_units_keeps_list_lead_ins():
    units = split_units(ART_154)
    assert units[:2] == [
        "§ 1. Wymiar urlopu wynosi: … 1) 20 dni – jeżeli pracownik jest zatrudniony krócej niż 10 lat;",
        "§ 1. Wymiar urlopu wynosi: … 2) 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat.",
    ]
    assert len(units) == 4 and units[3].startswith("§ 3. Wymiar urlopu w danym roku")
    # The same text without line breaks splits the same way; "Dz. U." does not end a sentence.
    assert split_units(ART_154.replace("\n", " ")) == units
    assert split_units("Art. 5. Stosuje się przepisy (Dz. U. z 2020 r. poz. 1). Koniec.") == [
        "Stosuje się przepisy (Dz. U. z 2020 r. poz. 1).",
        "Koniec.",
    ]
    # An EU regulation's citation: "Dz. Urz." and "str." do not end a sentence either.
    assert split_units("Art. 6. Stosuje się rozporządzenie (Dz. Urz. UE L 119 z 4.5.2016, str. 1). Koniec.") == [
        "Stosuje się rozporządzenie (Dz. Urz. UE L 119 z 4.5.2016, str. 1).",
        "Koniec.",
    ]


def test_extractive_answer_quotes_the_wording_in_force_and_says_a_later_one_exists():
    """A consolidated text's article with two wordings (pipeline.sources.parse.articles.TWO_WORDINGS): the
    current one is quoted, and a line says that a later one follows the amendment."""
    from pipeline.sources.parse.articles import TWO_WORDINGS

    text = ("Art. 24. 1. Kto przesyła niezamówioną informację handlową, podlega karze grzywny.\n"
            f"{TWO_WORDINGS}\nArt. 24. (uchylony)")
    answer = extractive_answer("Jaka kara grozi za niezamówioną informację handlową?",
                               [Fragment(act="DU/2024/1513", article="24", text=text)])
    lines = answer.text.splitlines()
    assert lines[2] == ("- 1. Kto przesyła niezamówioną informację handlową, podlega karze grzywny. "
                        "[DU/2024/1513, art. 24 ust. 1]")  # the unit the sentence stands in
    assert lines[-1].startswith("Uwaga: [DU/2024/1513, art. 24] ma w tekście jednolitym dwa brzmienia; zacytowano "
                                "pierwsze, obowiązujące w dniu, według którego sporządzono tekst jednolity")
    assert "obecne" not in lines[-1]  # with --as-of, or after the amendment, the later one may apply
    assert "uchylony" not in answer.text and answer.citations == [("DU/2024/1513", "24")]


def test_extractive_answer_quotes_a_paragraph_in_its_wording_in_force():
    """Kodeks pracy art. 177 prints § 1 twice (TWO_PARAGRAPH_WORDINGS): the first is quoted, the later
    one (here naming a leave that only the amendment brings) is not, and the note says it exists."""
    from pipeline.sources.parse.articles import TWO_PARAGRAPH_WORDINGS

    text = ("Art. 177. § 1. W okresie ciąży pracodawca nie może wypowiedzieć umowy o pracę.\n"
            f"{TWO_PARAGRAPH_WORDINGS}\n§ 1. W okresie ciąży i uzupełniającego urlopu pracodawca nie może "
            "wypowiedzieć umowy o pracę.\n§ 3. Umowa na okres próbny ulega przedłużeniu do dnia porodu.")
    answer = extractive_answer("Czy pracodawca może wypowiedzieć umowę w okresie ciąży?",
                               [Fragment(act="DU/2025/277", article="177", text=text)])
    assert "- § 1. W okresie ciąży pracodawca nie może wypowiedzieć umowy o pracę. [DU/2025/277, art. 177 § 1]" in answer.text
    assert "uzupełniającego" not in answer.text and "dwa brzmienia tego paragrafu" not in answer.text
    assert answer.text.splitlines()[-1].startswith("Uwaga: [DU/2025/277, art. 177] ma w tekście jednolitym dwa brzmienia")


def test_extractive_answer_picks_the_matching_point():
    answer = extractive_answer(QUESTION, FRAGMENTS)
    lines = answer.text.splitlines()
    assert lines[0] == EXTRACTIVE_NOTE
    assert lines[2] == (
        "- § 1. Wymiar urlopu wynosi: … 2) 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat. "
        "[DU/2025/277, art. 154 § 1 pkt 2]"  # the unit of the quoted point
    )
    assert len(lines) == 2 + 3
    assert answer.model is None and answer.cost_usd is None and answer.refused is False
    assert answer.citations[0] == (KP, "154")
    # A shorter career turns the ranking around.
    short = extractive_answer("Pracuję 4 lata, ile dni urlopu?", FRAGMENTS)
    assert "20 dni" in short.text.splitlines()[2]


def test_extractive_answer_marks_a_later_part_that_begins_mid_sentence():
    cut = Fragment(KP, "183", "obowiązku szkolnego, do 10 roku życia, ma prawo do urlopu na warunkach adopcyjnych. "
                   "§ 4. Urlop przysługuje także pracownikowi.", KP_TITLE, part=2)
    answer = extractive_answer("Czy przysługuje mi urlop na warunkach adopcyjnych?", [cut])
    assert "- … obowiązku szkolnego, do 10 roku życia, ma prawo do urlopu na warunkach adopcyjnych." in answer.text
    whole = dataclasses.replace(cut, part=1)  # the first part begins with its article: nothing cut
    assert "- obowiązku szkolnego" in extractive_answer("urlop na warunkach adopcyjnych", [whole]).text
    fallback = extractive_answer("zzz qqq", [cut], max_sentences=1)  # the no-overlap path marks it too
    assert fallback.text.splitlines()[2].startswith("- … obowiązku szkolnego")


def test_extractive_answer_without_overlap_shows_the_best_fragment():
    answer = extractive_answer("zzz qqq", FRAGMENTS, max_sentences=1)
    assert answer.text.splitlines()[2].startswith("- § 1. Wymiar urlopu wynosi: … 1) 20 dni")


def test_refusal_asks_no_model():
    answer = refusal(FRAGMENTS)
    assert answer.text == NOT_FOUND and answer.refused is True and answer.model is None
    assert extractive_answer(QUESTION, []).refused is True


def test_a_unit_cited_that_the_article_does_not_have_is_said():
    from pipeline.answering.citations import answer_warnings, unit_citations
    from pipeline.answering.fragments import Answer

    text = "Urlop wynosi 26 dni [DU/2025/277, art. 154 § 1 pkt 2], nie mniej [DU/2025/277, art. 154 § 7]."
    assert unit_citations(text) == [(KP, "154", "§ 1 pkt 2"), (KP, "154", "§ 7")]
    answer = Answer(text, FRAGMENTS, "test-model", citations=[(KP, "154")])
    assert [w for w in answer_warnings(answer) if "jednostki" in w] == [
        "Uwaga: odpowiedź cytuje jednostki, których nie ma w podanych artykułach: [DU/2025/277, art. 154 § 7]"]

