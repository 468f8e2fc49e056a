# Site values and form checks of the lesson's JupyterLab app, for form.yml.erb and submit.yml.erb.
#
# The site values come from the one place the lesson keeps them: the section lesson_site of the
# lesson's _config.yml. The app finds it two folders up from its own real location (install the
# app as a link into a checkout of the lesson), or at GPULESSON_SITE_CONFIG if that is set.
require "json"
require "yaml"

module LessonSite
  # A form value that is not valid, or that the cluster cannot grant; OnDemand shows the message.
  class FormError < StandardError; end

  LESSON_DIR = "gpu-lesson" # the folder setup.md clones into, relative to the home directory
  # The form's fields that a workshop session sets (lesson_schedule.sessions in _config.yml).
  SESSION_FIELDS = %w[hours cores memory_gb gpus].freeze

  module_function

  def config_path
    ENV.fetch("GPULESSON_SITE_CONFIG") do
      File.join(File.realpath(File.join(__dir__, "..", "..")), "_config.yml")
    end
  end

  def config
    path = config_path
    unless File.file?(path)
      raise FormError, "The lesson's site configuration #{path} is missing: install the app as " \
                       "a link into a checkout of the lesson, or set GPULESSON_SITE_CONFIG."
    end
    YAML.safe_load(File.read(path))
  end

  def site
    config.fetch("lesson_site")
  end

  # The workshop's sessions, in order, each with its request and its partition's name: the
  # first is the form's default. Episode 2 teaches these requests.
  def sessions(values = config)
    found = (values["lesson_schedule"] || {})["sessions"] || []
    if found.empty?
      raise FormError, "The lesson's _config.yml lists no sessions (lesson_schedule.sessions): " \
                       "restore them from the lesson's copy."
    end
    found.map do |session|
      session.merge("partition" => values.fetch("lesson_site")["#{session['partition']}_partition"])
    end
  end

  def defaults(values = config)
    sessions(values).first
  end

  # The session menu's options: a label, its value, and the fields it sets (Open OnDemand's
  # dynamic form: data-set-<field>).
  def session_options(values = config)
    sessions(values).map do |session|
      gpus = session["gpus"].to_i.zero? ? "no GPU" : "#{session['gpus']} GPU"
      label = "#{session['label']}: #{session['hours']} hours, #{session['cores']} cores, " \
              "#{session['memory_gb']} GB, #{gpus}"
      sets = SESSION_FIELDS.to_h { |field| ["data-set-#{field.tr('_', '-')}", session[field]] }
      [label, session["label"], sets.merge("data-set-partition" => session["partition"])]
    end
  end

  def gpu_types(values = site)
    values.fetch("gpu_gres_types").to_s.split
  end

  # A whole number from the form, between low and high, or a FormError naming the field.
  def whole(value, label, low, high)
    text = value.to_s.strip
    unless text.match?(/\A[+-]?\d+\z/)
      raise FormError, "#{label}: '#{text}' is not a whole number; enter one from #{low} to #{high}."
    end
    number = text.to_i
    if number < low || number > high
      raise FormError, "#{label}: #{number} is not possible here; enter a number from #{low} " \
                       "to #{high}."
    end
    number
  end

  # The lesson folder as the job will use it: a plain path, so that the shell takes it as is.
  def lesson_dir(value)
    folder = value.to_s.strip
    folder = LESSON_DIR if folder.empty?
    unless folder.match?(%r{\A[A-Za-z0-9._/-]+\z}) && !folder.split("/").include?("..")
      raise FormError, "Lesson folder: '#{folder}' may hold only letters, digits, '.', '_', '-' " \
                       "and '/'; give it relative to your home directory (such as " \
                       "#{LESSON_DIR}) or as an absolute path."
    end
    folder
  end

  # The workshop's reservation, if the instructor names one: a Slurm reservation name, or empty.
  def reservation(value)
    name = value.to_s.strip
    unless name.empty? || name.match?(/\A[A-Za-z0-9._-]+\z/)
      raise FormError, "Reservation: '#{name}' may hold only letters, digits, '.', '_' and '-'; " \
                       "type the name your instructor gives, or leave it empty."
    end
    name
  end

  # The form's values as sbatch options; a FormError says which value to change and how.
  def slurm_args(form, values = site)
    partitions = [values["gpu_partition"], values["cpu_partition"]].map(&:to_s)
    partition = form["partition"].to_s
    unless partitions.include?(partition)
      raise FormError, "Partition: '#{partition}' is not one of #{partitions.join(', ')}."
    end
    hours = whole(form["hours"], "Number of hours", 1, values["session_max_hours"].to_i)
    cores = whole(form["cores"], "Cores", 1, values["session_max_cores"].to_i)
    memory = whole(form["memory_gb"], "Memory (GB)", 1, values["session_max_memory_gb"].to_i)
    gpus = whole(form["gpus"], "Number of GPUs", 0, values["session_max_gpus"].to_i)
    lesson_dir(form["lesson_dir"])
    type = form["gpu_type"].to_s.strip
    type = "any" if type.empty?
    unless type == "any" || gpu_types(values).include?(type)
      raise FormError, "GPU type: '#{type}' is not a GPU type of this cluster; choose any, " \
                       "#{gpu_types(values).join(', ')}."
    end
    if gpus.positive? && partition != values["gpu_partition"].to_s
      raise FormError, "Number of GPUs: the partition #{partition} has no GPUs; choose " \
                       "#{values['gpu_partition']}, or 0 GPUs."
    end
    args = ["--partition=#{partition}", format("--time=%02d:00:00", hours), "--nodes=1",
            "--ntasks=1", "--cpus-per-task=#{cores}", "--mem=#{memory}G"]
    account = form["account"].to_s.strip
    args << "--account=#{account}" unless account.empty?
    reserved = reservation(form["reservation"])
    args << "--reservation=#{reserved}" unless reserved.empty?
    args << (type == "any" ? "--gres=gpu:#{gpus}" : "--gres=gpu:#{type}:#{gpus}") if gpus.positive?
    args
  end
end
