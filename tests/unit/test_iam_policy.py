from incident_responder.account.iam_policy import is_allowed, statement_services

S3_READ = {"Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::bucket/*"}]}


def test_allow_matches_action_and_resource():
    assert is_allowed([S3_READ], "s3:GetObject", "arn:aws:s3:::bucket/key")
    assert not is_allowed([S3_READ], "s3:PutObject", "arn:aws:s3:::bucket/key")
    assert not is_allowed([S3_READ], "s3:GetObject", "arn:aws:s3:::other/key")


def test_actions_are_case_insensitive_and_wildcards_work():
    doc = {"Statement": {"Effect": "Allow", "Action": "S3:get*", "Resource": "*"}}
    assert is_allowed([doc], "s3:GetObject", "arn:aws:s3:::any/thing")


def test_explicit_deny_wins_across_documents():
    deny = {"Statement": [{"Effect": "Deny", "Action": "s3:*", "Resource": "*"}]}
    assert not is_allowed([S3_READ, deny], "s3:GetObject", "arn:aws:s3:::bucket/key")


def test_not_action_and_not_resource():
    doc = {"Statement": [{"Effect": "Allow", "NotAction": "iam:*", "NotResource": "arn:aws:s3:::secret/*"}]}
    assert is_allowed([doc], "s3:GetObject", "arn:aws:s3:::bucket/key")
    assert not is_allowed([doc], "iam:PassRole", "*")
    assert not is_allowed([doc], "s3:GetObject", "arn:aws:s3:::secret/key")


def test_no_statements_means_implicit_deny():
    assert not is_allowed([], "logs:PutLogEvents", "*")


def test_statement_services():
    assert statement_services({"Action": ["s3:GetObject", "logs:PutLogEvents"]}) == {"s3", "logs"}
    assert statement_services({"Action": "*"}) == {"*"}
