#!/bin/sh
#PBS -N {{job_name}}
#PBS -q {{queue}}
#PBS -A {{account}}
#PBS -l select={{nodes}}:ncpus={{cores_per_node}}{{pbs_ngpus}}
#PBS -l place={{pbs_place}}
#PBS -l walltime={{walltime}}
#PBS -o {{stdout_path}}
#PBS -e {{stderr_path}}
{{body}}
