#!/bin/sh
#SBATCH --job-name={{job_name}}
#SBATCH --partition={{queue}}
#SBATCH --account={{account}}
#SBATCH --nodes={{nodes}}
#SBATCH --ntasks-per-node={{cores_per_node}}
#SBATCH --gres=gpu:{{gpus_per_node}}
#SBATCH --time={{walltime}}
#SBATCH --output={{stdout_path}}
#SBATCH --error={{stderr_path}}
{{body}}
