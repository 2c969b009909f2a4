#!/bin/sh
# hetpilot pilot {{job_name}}: started directly (ssh/local adapter) with setsid nohup
{{body}}
