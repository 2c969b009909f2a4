#!/bin/sh
# @ job_name = {{job_name}}
# @ job_type = parallel
# @ class = {{queue}}
# @ account_no = {{account}}
# @ node = {{nodes}}
# @ tasks_per_node = {{cores_per_node}}
# @ node_resources = {{loadleveler_gpus}}
# @ wall_clock_limit = {{walltime}}
# @ output = {{stdout_path}}
# @ error = {{stderr_path}}
# @ environment = COPY_ALL
# @ queue
{{body}}
