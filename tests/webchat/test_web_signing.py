"""Signed, expiring URLs: valid ones pass; expired, altered or foreign ones do not."""

from __future__ import annotations

import pytest
from aiohttp import web

from bridge.web.signing import (
    ExpiredSignature,
    InvalidSignature,
    SignatureError,
    sign,
    signature,
    verify,
    verify_url,
)

SECRET = "s3cret-for-tests"
PATH = "/telegram/main/files/AgACAgQAAxkBAAIB"
NOW = 1_700_000_000
LATER = NOW + 600


def test_a_signed_url_verifies_until_it_expires() -> None:
    url = sign(PATH, LATER, SECRET)
    assert url.startswith(PATH + "?expires=1700000600&sig=")
    assert verify_url(url, SECRET, now=NOW) == PATH
    assert verify_url("https://bridge.example" + url, SECRET, now=LATER - 1) == PATH


def test_an_expired_url_is_refused() -> None:
    url = sign(PATH, LATER, SECRET)
    with pytest.raises(ExpiredSignature):
        verify_url(url, SECRET, now=LATER)
    with pytest.raises(ExpiredSignature):
        verify_url(url, SECRET, now=LATER + 3600)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda url: url.replace(PATH, PATH + "x"),
        lambda url: url.replace(PATH, "/telegram/main/files/other"),
        lambda url: url.replace("expires=1700000600", "expires=1800000000"),
        lambda url: url.replace("expires=1700000600", "expires=soon"),
        lambda url: url[:-2] + ("AA" if not url.endswith("AA") else "BB"),
        lambda url: url.split("&sig=")[0],
        lambda url: url.split("?")[0],
        lambda url: url + "&sig=again",
        lambda url: url[:-1] + "%C3%A9",  # a non-ASCII signature
        lambda url: url[:-1] + "%ED%A0%80",  # bytes that are no UTF-8
    ],
)
def test_a_tampered_url_is_refused(tamper) -> None:
    url = tamper(sign(PATH, LATER, SECRET))
    with pytest.raises(InvalidSignature):
        verify_url(url, SECRET, now=NOW)


def test_another_secret_does_not_verify() -> None:
    url = sign(PATH, LATER, SECRET)
    with pytest.raises(InvalidSignature):
        verify_url(url, "another secret", now=NOW)


def test_signature_errors_share_a_base() -> None:
    assert issubclass(ExpiredSignature, SignatureError)
    assert issubclass(InvalidSignature, SignatureError)
    assert issubclass(SignatureError, ValueError)


def test_verify_checks_each_part() -> None:
    sig = signature(PATH, LATER, SECRET)
    verify(PATH, LATER, sig, SECRET, now=NOW)
    verify(PATH, str(LATER), sig, SECRET.encode(), now=NOW)
    with pytest.raises(InvalidSignature):
        verify(PATH, LATER, sig.upper(), SECRET, now=NOW)
    for foreign in (sig[:-1] + "é", sig[:-1] + "\udc80", sig[:-1] + "\ud800"):
        with pytest.raises(InvalidSignature):
            verify(PATH, LATER, foreign, SECRET, now=NOW)


def test_refuses_what_it_cannot_cover() -> None:
    with pytest.raises(ValueError, match="bare path"):
        sign(PATH + "?a=1", LATER, SECRET)
    with pytest.raises(ValueError, match="secret"):
        sign(PATH, LATER, "")


async def test_a_handler_can_guard_files_with_it(http) -> None:
    from bridge.web.server import WebServer

    server = WebServer("127.0.0.1:0")

    async def file(request: web.Request) -> web.Response:
        try:
            verify_url(request.raw_path, SECRET)
        except ExpiredSignature:
            raise web.HTTPGone() from None
        except SignatureError:
            raise web.HTTPForbidden() from None
        return web.Response(text="file bytes")

    server.router.add_get("/files/{name}", file)
    await server.start()
    try:
        good = sign("/files/photo.jpg", 4_000_000_000, SECRET)
        async with http.get(server.url + good) as response:
            assert (response.status, await response.text()) == (200, "file bytes")
        async with http.get(server.url + good.replace("photo", "other")) as response:
            assert response.status == 403
        async with http.get(server.url + sign("/files/photo.jpg", 1, SECRET)) as response:
            assert response.status == 410
    finally:
        await server.stop()
