# Source me: runs the plugin uninstalled from build/ with a private registry.
#   . scripts/env.sh
_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GST_PLUGIN_PATH="$_top/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
export GST_REGISTRY="$_top/build/registry.bin"
unset _top
