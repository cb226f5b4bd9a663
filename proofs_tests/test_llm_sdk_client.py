"""Model calls go through the official ``openai`` SDK (issue 31), configured and wrapped so that
nothing of the SDK's environment reaches a policy's endpoint (a real scripted server on 127.0.0.1).

The SDK reads ``OPENAI_ADMIN_KEY``, ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``, ``OPENAI_CUSTOM_HEADERS``
and ``OPENAI_BASE_URL`` from the environment; a policy names the endpoint, so none of them may go
there: only the key named by the endpoint's ``api_key_env``, and no redirect is followed.
The fault behaviour (deadline, retries, caps, safe errors) is test_llm_endpoint_faults.py's."""

from __future__ import annotations

import pytest
from scripted_llm import ScriptedLLM

from memsteward.chat import ChatClient, EndpointError
from memsteward.policy.model import Endpoint
from memsteward.repair.embedding import EndpointEmbedder

KEY_ENV = "MEMSTEWARD_TEST_SECRET_KEY"
SECRET = "sk-test-0123456789-do-not-print"
AMBIENT = {"OPENAI_API_KEY": "sk-ambient-api", "OPENAI_ADMIN_KEY": "sk-ambient-admin",
           "OPENAI_ORG_ID": "org-ambient", "OPENAI_PROJECT_ID": "proj-ambient",
           "OPENAI_CUSTOM_HEADERS": "X-Ambient: hdr-ambient\nAuthorization: Bearer sk-ambient-header",
           "OPENAI_BASE_URL": "http://127.0.0.1:9/elsewhere"}
MSGS = [{"role": "user", "content": "<records>[\"A b.\"]</records>"}]


@pytest.fixture()
def llm(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with ScriptedLLM() as server:
        yield server


def endpoint(url: str, **kw) -> Endpoint:
    return Endpoint(**{"base_url": url, "model": "scripted", "api_key_env": KEY_ENV, "timeout": 2.0,
                       "retries": 0, **kw})


def _sent(request: dict) -> str:
    return "\n".join(f"{k}: {v}" for k, v in request["headers"].items()) + "\n" + request["path"]


def test_the_request_is_the_sdks(llm):
    assert ChatClient(endpoint(llm.url)).complete("scripted", MSGS, 0.0, 3) == ("A b.", 1)
    (req,) = llm.requests
    assert req["path"] == "/v1/chat/completions"
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert headers["user-agent"].startswith("OpenAI/Python")  # the openai SDK built it
    assert req["body"] == {"model": "scripted", "messages": MSGS, "temperature": 0.0, "seed": 3}


def test_nothing_of_the_sdks_environment_reaches_the_endpoint(llm, monkeypatch):
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    assert ChatClient(endpoint(llm.url)).complete("scripted", MSGS, 0.0) == ("A b.", 1)
    (req,) = llm.requests  # reached the policy's endpoint, not OPENAI_BASE_URL
    sent = _sent(req)
    assert req["headers"]["Authorization"] == f"Bearer {SECRET}"
    for value in ("ambient", "OpenAI-Organization", "OpenAI-Project", "X-Ambient"):
        assert value.lower() not in sent.lower(), value


def test_no_key_no_authorization_whatever_the_environment(llm, monkeypatch):
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(KEY_ENV)
    ChatClient(endpoint(llm.url)).complete("scripted", MSGS, 0.0)
    assert "authorization" not in {k.lower() for k in llm.requests[0]["headers"]}


def test_embeddings_go_through_the_sdk_too(llm, monkeypatch):
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(Exception):  # noqa: B017 (the scripted server answers chat completions only)
        EndpointEmbedder(endpoint(llm.url)).embed("hello")
    (req,) = llm.requests
    assert req["path"] == "/v1/embeddings" and req["body"]["input"] == ["hello"]
    assert req["body"]["encoding_format"] == "float"
    assert req["headers"]["Authorization"] == f"Bearer {SECRET}" and "ambient" not in _sent(req)


def test_a_redirect_is_not_followed(llm):
    llm.always = "redirect"
    with pytest.raises(EndpointError, match=r"rejected \(HTTP 307\)"):
        ChatClient(endpoint(llm.url)).complete("scripted", MSGS, 0.0)
    assert llm.posts == 1


def test_organization_and_project_come_from_the_endpoint_only(llm, monkeypatch):
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    ChatClient(endpoint(llm.url, organization="org-policy", project="proj-policy")).complete("scripted", MSGS, 0.0)
    headers = {k.lower(): v for k, v in llm.requests[0]["headers"].items()}
    assert headers["openai-organization"] == "org-policy" and headers["openai-project"] == "proj-policy"
    assert "ambient" not in _sent(llm.requests[0])


def test_an_azure_endpoint_is_called_as_the_azure_client_does(llm, monkeypatch):
    for name, value in {**AMBIENT, "AZURE_OPENAI_API_KEY": "az-ambient", "OPENAI_API_VERSION": "ambient-version",
                        "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9", "AZURE_OPENAI_AD_TOKEN": "ad-ambient"}.items():
        monkeypatch.setenv(name, value)
    base = llm.url.removesuffix("/v1")
    text, _ = ChatClient(endpoint(base, api_version="2024-06-01")).complete("scripted", MSGS, 0.0)
    assert text == "A b."
    (req,) = llm.requests
    assert req["path"] == "/openai/deployments/scripted/chat/completions?api-version=2024-06-01"
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert headers["api-key"] == SECRET and "authorization" not in headers
    assert headers["user-agent"].startswith("AzureOpenAI/Python")
    assert "ambient" not in _sent(req)


@pytest.mark.parametrize("value", ["org 1", "org\r\nX-Injected: 1", "", "é", "x" * 129])
def test_header_values_cannot_start_another_header(value):
    from pydantic import ValidationError

    for field in ("organization", "project", "api_version"):
        with pytest.raises(ValidationError):
            endpoint("http://127.0.0.1:9/v1", **{field: value})
