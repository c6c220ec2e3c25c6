"""The lab's failure seam (``Lab.fail_requests``): a request is failed only when it is the operation named.

S3's object operations share one path (``PUT /{Bucket}/{Key+}`` is PutObject, CopyObject, UploadPart, and with a
query key PutObjectTagging, PutObjectAcl ...): the operation is told by the query keys and headers it requires.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError


@pytest.fixture
def bucket(clients, lab):
    s3 = clients.get("s3")
    s3.create_bucket(Bucket="seam")
    s3.put_object(Bucket="seam", Key="source", Body=b"x")
    yield s3
    lab.clear_failures()


def test_put_object_fails_when_asked_and_only_then(bucket, lab):
    lab.fail_requests("PutObject", service="s3", code="AccessDenied", status=403, times=1)
    with pytest.raises(ClientError) as refused:
        bucket.put_object(Bucket="seam", Key="a", Body=b"1")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    bucket.put_object(Bucket="seam", Key="a", Body=b"1")  # used up: the next one goes through
    assert lab.failed_requests[-1:] == ["s3:PutObject"]


@pytest.mark.parametrize(
    "operation, call",
    [
        (
            "CopyObject",
            lambda s3: s3.copy_object(Bucket="seam", Key="b", CopySource={"Bucket": "seam", "Key": "source"}),
        ),
        ("PutObjectTagging", lambda s3: s3.put_object_tagging(Bucket="seam", Key="source", Tagging={"TagSet": []})),
        (
            "UploadPart",
            lambda s3: s3.upload_part(
                Bucket="seam",
                Key="c",
                PartNumber=1,
                Body=b"1",
                UploadId=s3.create_multipart_upload(Bucket="seam", Key="c")["UploadId"],
            ),
        ),
    ],
)
def test_operations_sharing_the_object_path_are_told_apart(bucket, lab, operation, call):
    lab.fail_requests(operation, service="s3", times=1)
    bucket.put_object(Bucket="seam", Key="d", Body=b"1")  # PutObject is not the operation named
    with pytest.raises(ClientError) as refused:
        call(bucket)
    assert refused.value.response["Error"]["Code"] == "InjectedFailure"
    assert lab.failed_requests[-1:] == [f"s3:{operation}"]
