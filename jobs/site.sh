# Site values for the lesson's batch jobs, read from the one place the lesson keeps them: the
# section lesson_site of _config.yml. Source it in the lesson folder, then submit as usual:
#   source jobs/site.sh
#   sbatch jobs/train-cnn.sbatch --epochs 30
# sbatch reads SBATCH_PARTITION and SBATCH_ACCOUNT as if they were --partition and --account
# (options on the sbatch command line still win); the scripts load LESSON_CONDA_MODULE and
# activate LESSON_CONDA_ENV (the site's conda environment, a name or a folder), which wins over a
# .venv in the lesson folder. A variable that is set already is kept; an empty value is left out.

_lesson_site_value() {
    # The value of "  <key>: <value>" inside "lesson_site:", without quotes or a comment.
    awk -v key="$1" '
        /^lesson_site:/ { inside = 1; next }
        inside && /^[^ #]/ { inside = 0 }
        inside && $1 == key ":" {
            sub(/^[^:]*:[ \t]*/, ""); sub(/[ \t]+#.*$/, ""); gsub(/^["\047]|["\047]$/, "")
            print; exit
        }' "${LESSON_SITE_CONFIG:-_config.yml}"
}

if [ ! -f "${LESSON_SITE_CONFIG:-_config.yml}" ]; then
    echo "No ${LESSON_SITE_CONFIG:-_config.yml} here: source jobs/site.sh in the lesson folder" >&2
    return 2 2>/dev/null || exit 2
fi
for _pair in SBATCH_PARTITION:gpu_partition SBATCH_ACCOUNT:account LESSON_CONDA_MODULE:conda_module \
             LESSON_CONDA_ENV:conda_env; do
    _name=${_pair%%:*}
    _value=$(_lesson_site_value "${_pair#*:}")
    if [ -z "$(printenv "$_name")" ] && [ -n "$_value" ]; then
        export "$_name=$_value"
    fi
done
unset _pair _name _value
unset -f _lesson_site_value
