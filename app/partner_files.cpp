// Coherence and mask per input from a template (app/partner_files.h).
#include "app/partner_files.h"

#include <filesystem>

#include "io/input_error.h"
#include "partition/comm.h"
#include "partition/error_agreement.h"

namespace tessera {

bool is_partner_template(const std::string& s) { return s.find('{') != std::string::npos; }

std::string partner_file(const std::string& tmpl, const std::string& input, const std::string& option) {
    if (!is_partner_template(tmpl)) return tmpl;
    const std::filesystem::path p(input);
    const std::string file = p.filename().string();
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const std::string fields[][2] = {{"dir", dir},
                                     {"stem", p.stem().string()},
                                     {"name", file.substr(0, file.find('.', 1))}};  // ".x": a hidden file's name
    std::string out;
    for (size_t i = 0; i < tmpl.size();) {
        if (tmpl[i] != '{') {
            out += tmpl[i++];
            continue;
        }
        const size_t close = tmpl.find('}', i);
        if (close == std::string::npos)
            throw InputError::everywhere(option + " '" + tmpl + "': unclosed '{' (fields: {dir}, {stem}, {name})");
        const std::string key = tmpl.substr(i + 1, close - i - 1);
        bool known = false;
        for (const auto& f : fields)
            if (key == f[0]) out += f[1], known = true;
        if (!known)
            throw InputError::everywhere(option + " '" + tmpl + "': unknown field {" + key +
                                         "} (fields: {dir}, {stem}, {name})");
        i = close + 1;
    }
    return out;
}

void check_partners(const std::string& in, const RasterInfo& ri, const UnwrapOptions& base, bool same_size) {
    struct Partner {
        const std::string& tmpl;
        int band;
        const char *option, *what;
    };
    for (const Partner& p : {Partner{base.coherence, base.coherence_band, "--coherence", "its coherence"},
                             Partner{base.mask, base.mask_band, "--mask", "its mask"}}) {
        if (p.tmpl.empty()) continue;
        const std::string file = partner_file(p.tmpl, in, p.option);
        try {
            const RasterReader r(file, auxiliary_band(file, p.band, std::string(p.option) + "-band"));
            if (same_size && (r.info().rows != ri.rows || r.info().cols != ri.cols))
                throw InputError(file, "size " + std::to_string(r.info().cols) + "x" + std::to_string(r.info().rows) +
                                           " (cols x rows) differs from the input's " + std::to_string(ri.cols) +
                                           "x" + std::to_string(ri.rows));
        } catch (const InputError& e) {
            const std::string how = is_partner_template(p.tmpl) ? std::string(" (") + p.option + " '" + p.tmpl + "')" : "";
            throw InputError(in, p.what + how + ": " + e.what());
        }
    }
}

void use_own_partners(UnwrapOptions& o, MPI_Comm mpi_comm) {
    if (!is_partner_template(o.coherence) && !is_partner_template(o.mask)) return;
    Comm comm(mpi_comm);
    agree_on_errors(comm, [&] { check_partners(o.input, RasterReader(o.input, o.band).info(), o, true); });
    o.coherence = partner_file(o.coherence, o.input, "--coherence");
    o.mask = partner_file(o.mask, o.input, "--mask");
}

}  // namespace tessera
