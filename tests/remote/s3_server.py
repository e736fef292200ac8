"""A real S3-compatible HTTP server on loopback for the remote-logdir tests: moto's
standalone server (`moto[server]`), with IAM authentication switched on once the test user
exists, so a wrong credential is refused like on AWS."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from tests.process_group import log_tail, stop_group
from tests.tb_server import free_port

REGION = "us-east-1"


class S3Server:
    def __init__(self):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.key_id = self.secret = ""
        self.proc = None
        self.log_path = tempfile.mktemp(prefix="moto-", suffix=".log")

    def start(self, timeout: float = 60) -> "S3Server":
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()  # never leave a server behind when starting fails half-way
            raise

    def _start(self, timeout: float) -> "S3Server":
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            env=dict(os.environ, AWS_EC2_METADATA_DISABLED="true"))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto server exited: {self.log()}")
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        else:
            raise RuntimeError(f"moto server did not answer in {timeout}s: {self.log()}")
        self._make_user()
        return self

    def _make_user(self) -> None:
        """An IAM user allowed everything, then authentication on for every request."""
        self.key_id, self.secret = self.make_user("profiler", ["*"], iam_key=("setup", "setup"))
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth", data=b"0",
                                     method="POST", headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(req, timeout=10).close()

    def _iam(self, key=None):
        import boto3

        key_id, secret = key or (self.key_id, self.secret)
        return boto3.client("iam", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=key_id, aws_secret_access_key=secret)

    def make_user(self, name: str, actions: list[str], iam_key=None) -> tuple[str, str]:
        """A user allowed only `actions` (e.g. ["s3:ListBucket"]); its (key id, secret)."""
        iam = self._iam(iam_key)
        iam.create_user(UserName=name)
        self.allow(name, actions, iam_key)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def allow(self, name: str, actions: list[str], iam_key=None) -> None:
        """Replace the user's policy: `actions` allowed on every resource."""
        self._iam(iam_key).put_user_policy(UserName=name, PolicyName="only", PolicyDocument=(
            json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": actions, "Resource": "*"}]})))

    def env(self, secret: str | None = None, key: tuple[str, str] | None = None) -> dict:
        """The standard AWS environment a user sets for an S3-compatible store; nothing
        from the machine's own AWS configuration, and never the instance-metadata
        endpoint."""
        key_id, key_secret = key or (self.key_id, self.secret)
        return {"AWS_ACCESS_KEY_ID": key_id,
                "AWS_SECRET_ACCESS_KEY": key_secret if secret is None else secret,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": REGION,
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true",
                # TensorBoard's own S3 reader (its other plugins) takes its endpoint here.
                "S3_ENDPOINT": self.endpoint}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)

    def make_bucket(self, bucket: str) -> None:
        self.client().create_bucket(Bucket=bucket)

    def upload(self, local_dir: str, bucket: str, prefix: str) -> int:
        """Every file under local_dir as `prefix/<relative path>`; returns the count."""
        client, n = self.client(), 0
        for d, _, files in os.walk(local_dir):
            for f in sorted(files):
                full = os.path.join(d, f)
                rel = os.path.relpath(full, local_dir).replace(os.sep, "/")
                client.upload_file(full, bucket, f"{prefix.rstrip('/')}/{rel}")
                n += 1
        return n

    def log(self) -> str:
        return log_tail(self.log_path, 3000)

    def stop(self) -> None:
        stop_group(self.proc)
        if getattr(self, "_log", None):
            self._log.close()
        with contextlib.suppress(OSError):
            os.remove(self.log_path)
