"""The one results-location parser: every accepted form splits right, every refusal names the value and the fix."""

from __future__ import annotations

import pytest

from payload.results_location import (
    BUCKET_SCHEMES,
    URL_SCHEMES,
    ResultsLocationError,
    parse_results_location,
)


@pytest.mark.parametrize(
    "text, scheme, bucket, prefix, path, url",
    [
        ("s3://my-results", "s3", "my-results", "", "", "s3://my-results"),
        ("s3://my-results/", "s3", "my-results", "", "", "s3://my-results"),
        ("s3://my-results/team/runs/", "s3", "my-results", "team/runs/", "", "s3://my-results/team/runs"),
        (
            "gs://gpubench.results.example/a",
            "gs",
            "gpubench.results.example",
            "a/",
            "",
            "gs://gpubench.results.example/a",
        ),
        ("file:///srv/results", "file", "", "", "/srv/results", "file:///srv/results"),
        ("file://localhost/srv/results", "file", "", "", "/srv/results", "file://localhost/srv/results"),
        ("file:/srv/results", "file", "", "", "/srv/results", "file:/srv/results"),
        ("results", "file", "", "", "results", "results"),
        ("/home/me/My Results", "file", "", "", "/home/me/My Results", "/home/me/My Results"),
    ],
)
def test_valid_forms_split_into_their_parts(text, scheme, bucket, prefix, path, url):
    loc = parse_results_location(text)
    assert (loc.scheme, loc.bucket, loc.prefix, loc.path, loc.url) == (scheme, bucket, prefix, path, url)
    assert loc.is_bucket == (scheme in BUCKET_SCHEMES)
    assert loc.given_as_path == ("://" not in text and not text.startswith("file:"))


@pytest.mark.parametrize(
    "text, schemes, fragments",
    [
        ("", URL_SCHEMES, ["non-empty URL or path"]),
        ("   ", URL_SCHEMES, ["non-empty URL or path"]),
        ("s3://bucket\n", URL_SCHEMES, ["'s3://bucket\\n'", "control character", "one line"]),
        (" s3://bucket", URL_SCHEMES, ["starts or ends with whitespace", "write 's3://bucket'"]),
        ("s3://bucket/my prefix", URL_SCHEMES, ["contains whitespace", "remove the spaces"]),
        ("ftp://host/x", URL_SCHEMES, ["'ftp://host/x' is neither a bucket URL", "s3://bucket[/prefix]", "file:///"]),
        ("S3://bucket", URL_SCHEMES, ["'S3://'", "did you mean 's3://bucket'?"]),
        ("gcs://bucket/x", URL_SCHEMES, ["'gcs://'", "did you mean 'gs://bucket/x'?"]),
        ("s3a://bucket", URL_SCHEMES, ["did you mean 's3://bucket'?"]),
        ("fil:///srv/x", URL_SCHEMES, ["did you mean 'file:///srv/x'?"]),
        ("s3:/bucket", URL_SCHEMES, ["missing the '//'", "write 's3://bucket'"]),
        ("gs:bucket", URL_SCHEMES, ["missing the '//'", "write 'gs://bucket'"]),
        ("s3://", URL_SCHEMES, ["names no bucket", "s3://my-results-bucket"]),
        ("s3:///prefix", URL_SCHEMES, ["names no bucket"]),
        ("s3://My_Bucket/x", URL_SCHEMES, ["'My_Bucket'", "lowercase"]),
        ("s3://ab", URL_SCHEMES, ["'ab'", "3 to 63"]),
        ("s3://10.0.0.1", URL_SCHEMES, ["IP addresses"]),
        ("s3://xn--bucket", URL_SCHEMES, ["reserves the prefixes"]),
        ("gs://google-results", URL_SCHEMES, ["'google-results'", "google"]),
        ("gs://a" + "b" * 70, URL_SCHEMES, ["3 to 63 characters"]),
        ("gs://a..b", URL_SCHEMES, ["no '..'"]),
        ("gs://-ab", URL_SCHEMES, ["start and end with a letter or digit"]),
        ("file://host/dir", URL_SCHEMES, ["names the host 'host'", "file:///absolute/path"]),
        ("file:relative/dir", URL_SCHEMES, ["not an absolute file URL", "file:///absolute/path"]),
        ("file:///", URL_SCHEMES, ["names no directory"]),
        ("results", URL_SCHEMES, ["'results' is a bare path", "file:///"]),
        ("results", BUCKET_SCHEMES, ["'results' is a bare path", "use e.g. s3://bucket[/prefix]"]),
        ("file:///srv/x", BUCKET_SCHEMES, ["'file:///srv/x' is not a bucket URL", "use e.g. s3://"]),
    ],
)
def test_every_error_names_the_value_and_the_fix(text, schemes, fragments):
    with pytest.raises(ResultsLocationError) as err:
        parse_results_location(text, schemes=schemes)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


def test_other_forms_join_the_list_of_what_would_have_worked():
    with pytest.raises(ResultsLocationError, match=r"neither a bucket URL .* nor a stack reference \(stack:x\)"):
        parse_results_location("ftp://x", schemes=BUCKET_SCHEMES, other_forms=["a stack reference (stack:x)"])


@pytest.mark.parametrize("value", [None, 3, b"s3://b"])
def test_a_non_string_is_refused(value):
    with pytest.raises(ResultsLocationError, match="non-empty URL or path"):
        parse_results_location(value)


def test_bucket_rules_can_be_left_to_the_store():
    assert parse_results_location("gs://b/x", bucket_rules=False).bucket == "b"
    with pytest.raises(ResultsLocationError, match="names no bucket"):
        parse_results_location("gs:///x", bucket_rules=False)
