set -eu
umask 077
{{setup}}
export HETPILOT_URL={{manager_url}} HETPILOT_PLATFORM={{platform}} HETPILOT_PILOT={{pilot}}
export HETPILOT_AGENT_TOKEN_FILE={{credential_path}} HETPILOT_WORK_DIR={{work_dir}}
export HETPILOT_TLS_FINGERPRINT={{tls_fingerprint}}
export HETPILOT_WALLTIME_END=$(( $(date +%s) + {{walltime_secs}} ))
export HETPILOT_SANDBOX={{sandbox}}
agent={{agent_binary}}
if [ ! -x "$agent" ]; then
    echo "hetpilot: the agent binary $agent is missing or not executable on $(hostname); fix agent_binary in the platform profile" >&2
    exit 127
fi
{{launch}}
