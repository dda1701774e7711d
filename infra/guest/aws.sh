#!/bin/bash
# AWS: the instance's identity (IMDSv2), a create-only upload, and the end of the machine.
# Sourced by end-run.sh.
imds="${AWS_EC2_METADATA_SERVICE_ENDPOINT:-http://169.254.169.254/}"
imds="${imds%/}"

instance_id() {
  local token
  token="$(curl -sf --max-time 5 -X PUT "$imds/latest/api/token" -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')" &&
    curl -sf --max-time 5 -H "X-aws-ec2-metadata-token: $token" "$imds/latest/meta-data/instance-id"
}

# upload FILE s3://BUCKET/KEY: create only (If-None-Match: *).
upload() {
  local rest="${2#s3://}"
  local bucket="${rest%%/*}"
  local key="${rest#*/}"
  local args=(s3api put-object --if-none-match '*' --bucket "$bucket" --key "$key" --body "$1")
  if command -v aws >/dev/null 2>&1 && aws "${args[@]}" >/dev/null; then
    return 0
  fi
  docker run --rm --network host -e AWS_DEFAULT_REGION -v "$1:$1:ro" amazon/aws-cli "${args[@]}" >/dev/null
}

# instance_initiated_shutdown_behavior=terminate: powering off terminates the instance.
end_machine() {
  systemctl --no-block poweroff
}
