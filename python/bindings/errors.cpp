// taihu's errors as Python exceptions: ConfigError (bad input: a config, a
// shape, a file, a sample: taihu's ConfigError, ShapeError, DataError) is a ValueError, NumericError (a NaN or infinite loss) an
// ArithmeticError, every other taihu::Error a RuntimeError; all derive from
// taihu.Error. Never a crash of the interpreter.
#include "core/common/error.hpp"
#include "python/bindings/bindings.hpp"

namespace taihu::python {

namespace py = pybind11;

void bind_errors(py::module_& m) {
  // Each kind has two bases, taihu.Error and the builtin it is, so that both
  // `except taihu.Error` and `except ValueError` catch a bad config.
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<ConfigError> config_error(m, "ConfigError",
                                                 py::make_tuple(error, py::handle(PyExc_ValueError)));
  static py::exception<NumericError> numeric_error(m, "NumericError",
                                                   py::make_tuple(error, py::handle(PyExc_ArithmeticError)));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const NumericError& e) {
      numeric_error(e.what());
    } catch (const ConfigError& e) {
      config_error(e.what());
    } catch (const DataError& e) {  // bad input too: a sample, a file
      config_error(e.what());
    } catch (const ShapeError& e) {
      config_error(e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });
}

}  // namespace taihu::python
