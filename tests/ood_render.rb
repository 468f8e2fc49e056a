# A small stand-in of Open OnDemand's dashboard for the tests of ood/gpulesson-jupyterlab: it
# renders the app's ERB files as the dashboard does (ERB with trim mode "-", the file's name
# set, form attributes as methods, "context" in the templates) and prints JSON for the test.
#
#   ruby tests/ood_render.rb form APP                       -> the form's attributes
#   ruby tests/ood_render.rb submit APP VALUES.json STAGED  -> sbatch options; templates in STAGED
#   ruby tests/ood_render.rb view APP CONNECTION.yml        -> the Connect button's HTML
#
# A FormError from the app is printed on stderr (exit 3), as the dashboard shows it.
require "erb"
require "json"
require "ostruct"
require "yaml"
require "fileutils"

def render(path, bind)
  erb = ERB.new(File.read(path), trim_mode: "-")
  erb.filename = path
  erb.result(bind)
end

# The session context: every form attribute answers as a method, and as context.<name>.
class Context
  def initialize(values)
    @values = values
    values.each { |name, value| define_singleton_method(name) { value } }
  end

  def context
    OpenStruct.new(@values)
  end

  def bind
    binding
  end
end

def form(app)
  YAML.safe_load(render(File.join(app, "form.yml.erb"), binding))
end

mode, app, *rest = ARGV
begin
  case mode
  when "form"
    puts JSON.generate(form(app))
  when "submit"
    values_file, staged = rest
    config = form(app)
    # A field's value, or for a select without one its first option, as the form shows it.
    values = config["attributes"].to_h do |name, attr|
      [name, (attr["value"] || attr.fetch("options", [[nil, ""]]).first.last).to_s]
    end
    values.merge!(JSON.parse(File.read(values_file)).transform_values(&:to_s))
    values["cluster"] = config["cluster"]
    context = Context.new(values)
    submit = YAML.safe_load(render(File.join(app, "submit.yml.erb"), context.bind))
    FileUtils.mkdir_p(staged)
    Dir.glob(File.join(app, "template", "*.erb")).each do |template|
      target = File.join(staged, File.basename(template, ".erb"))
      File.write(target, render(template, context.bind))
      File.chmod(File.stat(template).mode & 0o777, target)
    end
    puts JSON.generate({ "submit" => submit, "values" => values })
  when "view"
    connection = YAML.safe_load(File.read(rest[0]))
    puts render(File.join(app, "view.html.erb"), Context.new(connection).bind)
  else
    abort "usage: ruby tests/ood_render.rb form|submit|view APP ..."
  end
rescue StandardError => e
  raise unless e.class.name == "LessonSite::FormError"

  warn e.message
  exit 3
end
