#!/bin/sh
#PBS -N {{job_name}}
#PBS -q {{queue}}
#PBS -A {{account}}
#PBS -l nodes={{nodes}}:ppn={{cores_per_node}}{{torque_gpus}},walltime={{walltime}}
#PBS -o {{stdout_path}}
#PBS -e {{stderr_path}}
{{body}}
